import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { exited } from '../helpers/processes.ts';
import { failsWith, json, newSession, ok, signedUpUser, spawnCli, type CliUser } from './cli-helpers.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

const stack = await startSandboxStack();
let shared: { user: CliUser; id: string } | undefined;

/** One user with one running session, shared by the tests that do not change either. */
async function session() {
  if (!shared) {
    const user = await signedUpUser(stack.url);
    shared = { user, id: await newSession(user) };
  }
  return shared;
}

test('exec keeps stdout and stderr apart and exits with the command\'s own exit code', async () => {
  const { user } = await session();
  const r = await user.run(['exec', '--', 'echo out; echo err >&2; exit 7']);
  assert.equal(r.code, 7, `stderr: ${r.stderr}`);
  assert.equal(r.stdout, 'out\n');
  assert.equal(r.stderr, 'err\n');
  assert.equal((await user.run(['exec', '--', 'true'])).code, 0);
  assert.equal((await user.run(['exec', '--', 'false'])).code, 1);
});

test('several arguments are argv, run as given; options after the program belong to it', async () => {
  const { user } = await session();
  assert.equal(ok(await user.run(['exec', '--', 'printf', '%s|', 'a b', '$HOME', ';'])), 'a b|$HOME|;|');
  assert.equal(ok(await user.run(['exec', 'ls', '-d', '/workspace'])), '/workspace\n');
});

test('exec streams output live, as the command produces it', async () => {
  const { user } = await session();
  const child = spawnCli(user.home, ['exec', '--', 'echo first; sleep 4; echo second']);
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  const started = Date.now();
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const firstSeen = new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes('first')) resolve(Date.now());
    });
    child.once('close', () => reject(new Error(`exec ended without printing first: ${stdout} ${stderr}`)));
  });
  const seenAt = await firstSeen;
  assert.ok(!stdout.includes('second'), 'the first line arrives before the command ends');
  const { code } = await exited(child);
  assert.equal(code, 0);
  assert.equal(stdout, 'first\nsecond\n');
  assert.ok(Date.now() - seenAt >= 3000, `first was seen ${seenAt - started} ms in, long before the end`);
});

test('a reader that stops early (| head) ends exec quietly with 141, and the command in the sandbox with it', async () => {
  const { user } = await session();
  const marker = `pipe-reader-${Date.now()}`;
  // Endless output from a command the sandbox would otherwise run until its timeout.
  const child = spawnCli(user.home, ['exec', '--timeout', '120', '--', `bash -c "exec -a ${marker} sh -c 'while :; do echo y; done'"`]);
  child.stdin.end();
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('close', () => reject(new Error(`exec ended before any output: ${stderr}`)));
  });
  child.stdout.destroy(); // what head does after its first line
  const { code } = await exited(child);
  assert.equal(code, 141, stderr);
  assert.doesNotMatch(stderr, /EPIPE|Unhandled|node:/, 'no stack trace');
  // The command's stream lost its client: it is ended in the sandbox.
  const deadline = Date.now() + 15_000;
  let left = '';
  do {
    left = (await user.run(['exec', '--', `ps -eo args | grep -c '^${marker}' || true`])).stdout.trim();
  } while (left !== '0' && Date.now() < deadline && (await new Promise((r) => setTimeout(r, 300, true))));
  assert.equal(left, '0', 'the command still runs in the sandbox');
});

test('piped standard input is passed on; --no-stdin keeps it back', async () => {
  const { user } = await session();
  assert.equal(ok(await user.run(['exec', '--', 'wc', '-l'], { input: 'a\nb\nc\n' })), '3\n');
  assert.equal(ok(await user.run(['exec', '--', 'cat'], { input: 'piped data' })), 'piped data');
  assert.equal(ok(await user.run(['exec', '--no-stdin', '--', 'cat'], { input: 'kept back' })), '');
});

test('piped input that is not UTF-8 is refused, not sent changed, and says how to send a file', async () => {
  const { user } = await session();
  const r = await user.run(['exec', '--', 'wc', '-c'], { input: Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x61]) });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /not UTF-8 text/);
  assert.match(r.stderr, /Hint: .*files create <path> --from/);
  assert.equal(r.stdout, '');
});

test('exec --cwd and --env', async () => {
  const { user } = await session();
  ok(await user.run(['files', 'create', 'sub/dir/f.txt', '--content', 'x']));
  assert.equal(ok(await user.run(['exec', '--cwd', '/workspace/sub/dir', '--', 'pwd'])), '/workspace/sub/dir\n');
  assert.equal(ok(await user.run(['exec', '--env', 'A=1', '-e', 'B=two=2', '--', 'sh', '-c', 'echo $A $B'])), '1 two=2\n');
  const bad = await user.run(['exec', '--env', 'novalue', '--', 'true']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /KEY=VALUE/);
});

test('exec --timeout stops the command and exits 124, keeping the output so far', async () => {
  const { user } = await session();
  const r = await user.run(['exec', '--timeout', '1', '--', 'echo before; sleep 10; echo after']);
  assert.equal(r.code, 124);
  assert.equal(r.stdout, 'before\n');
  assert.match(r.stderr, /timed out after 1 s/);
});

test('exec --json prints the buffered result and still exits with the command\'s code', async () => {
  const { user } = await session();
  const r = await user.run(['exec', '--json', '--', 'echo out; echo err >&2; exit 3']);
  assert.equal(r.code, 3);
  const result = JSON.parse(r.stdout);
  assert.equal(result.exitCode, 3);
  assert.equal(result.stdout, 'out\n');
  assert.equal(result.stderr, 'err\n');
  assert.equal(result.timedOut, false);
  assert.equal(typeof result.durationMs, 'number');
});

test('a command refused by the allowlist runs nothing and exits 125 with the code and a hint', async () => {
  const user = await signedUpUser(stack.url);
  await newSession(user);
  ok(await user.run(['allowlist', 'set', 'echo']));
  assert.equal(ok(await user.run(['exec', '--', 'echo', 'allowed'])), 'allowed\n');
  const r = await user.run(['exec', '--', 'touch', '/workspace/should-not-exist']);
  failsWith(r, 'command_not_allowed', 125);
  assert.match(r.stderr, /Hint: .*allowlist/);
  const j = await user.run(['exec', '--json', '--', 'touch', 'x']);
  assert.equal(j.code, 125);
  assert.equal(JSON.parse(j.stderr).error.code, 'command_not_allowed');
  ok(await user.run(['allowlist', 'clear']));
  assert.deepEqual(json(await user.run(['files', 'glob', 'should-not-exist', '--json'])).matches, []);
});

test("exec's errors name its own flags: the API's timeoutSeconds is --timeout", async () => {
  const { user } = await session();
  const r = await user.run(['exec', '--timeout', '100000', '--', 'true']);
  failsWith(r, 'invalid_request', 125);
  assert.match(r.stderr, /^Error: --timeout: at most 900 seconds/m);
  assert.ok(!r.stderr.includes('timeoutSeconds'), r.stderr);
});

test("a bad name in a map or a list is named in the command's terms: --env 1BAD, <program...> #2, --event #1", async () => {
  const { user } = await session();
  const env = await user.run(['exec', '-e', '1BAD=x', '--', 'true']);
  failsWith(env, 'invalid_request', 125);
  assert.match(env.stderr, /^Error: --env 1BAD: the name is not accepted: env names must be environment variable names/m);
  const programs = await user.run(['allowlist', 'set', 'ls', 'bad prog']);
  failsWith(programs, 'invalid_request');
  assert.match(programs.stderr, /^Error: <program\.\.\.> #2: /m);
  const events = await user.run(['webhooks', 'add', 'https://hooks.example.com/x', '-e', 'sandbox.bogus']);
  failsWith(events, 'invalid_request');
  assert.match(events.stderr, /^Error: --event #1: /m);
  for (const r of [env, programs, events]) assert.doesNotMatch(r.stderr, /body\.|Invalid key in record/, r.stderr);
  const long = 'k'.repeat(300);
  const metadata = await user.run(['session', 'create', '--metadata', `${long}=v`]);
  failsWith(metadata, 'invalid_request');
  assert.match(metadata.stderr, /^Error: --metadata k{40}…: the name is not accepted: /m);
  assert.ok(!metadata.stderr.includes(long), 'a 300-character name is not echoed whole');
});
