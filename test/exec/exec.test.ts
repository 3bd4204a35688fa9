import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

const stack = await startSandboxStack({ overrides: { PADDOCK_EXEC_OUTPUT_MAX_BYTES: '2048', PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });
const owner = await newAccount(stack.url);
const sandbox = (await createSandbox(stack.url, owner.key)).body;

function exec(body: unknown, headers: Record<string, string> = {}, key = owner.key, id = sandbox.id) {
  return call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: key, body, headers });
}

async function streamLines(body: unknown): Promise<any[]> {
  const res = await fetch(`${stack.url}/v1/sandboxes/${sandbox.id}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /application\/x-ndjson/);
  return (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
}

test('exit codes, stdout and stderr apart, duration', async () => {
  const ok = await exec({ command: 'echo out; echo err >&2' });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(ok.body.exitCode, 0);
  assert.equal(ok.body.stdout, 'out\n');
  assert.equal(ok.body.stderr, 'err\n');
  assert.equal(ok.body.timedOut, false);
  assert.equal(ok.body.signal, null);
  assert.ok(Number.isInteger(ok.body.durationMs) && ok.body.durationMs >= 0);
  assert.ok(ok.headers.get('x-ratelimit-limit'));
  assert.equal((await exec({ command: 'exit 3' })).body.exitCode, 3);
  assert.equal((await exec({ command: ['false'] })).body.exitCode, 1);
  const missing = await exec({ command: ['no-such-program-xyz'] });
  assert.equal(missing.body.exitCode, 127, JSON.stringify(missing.body));
});

test('a command ended by a signal reports the signal', async () => {
  const res = await exec({ command: 'kill -TERM $$' });
  assert.equal(res.body.exitCode, null);
  assert.equal(res.body.signal, 'SIGTERM');
});

test('argv form runs as given, without a shell', async () => {
  const res = await exec({ command: ['printf', '%s|', 'a b', '$HOME', '*'] });
  assert.equal(res.body.stdout, 'a b|$HOME|*|');
});

test('stdin, cwd and env', async () => {
  assert.equal((await exec({ command: 'tr a-z A-Z', stdin: 'héllo\n' })).body.stdout, 'HéLLO\n');
  assert.equal((await exec({ command: 'pwd' })).body.stdout, '/workspace\n');
  await exec({ command: 'mkdir -p /workspace/sub' });
  assert.equal((await exec({ command: 'pwd', cwd: '/workspace/sub' })).body.stdout, '/workspace/sub\n');
  assert.equal((await exec({ command: 'printf %s "$GREETING"', env: { GREETING: 'hi there' } })).body.stdout, 'hi there');
  const badCwd = await exec({ command: 'pwd', cwd: '/nonexistent' });
  assert.notEqual(badCwd.body.exitCode, 0);
});

test('a timeout kills the whole process tree and keeps the output produced until then', async () => {
  const res = await exec({ command: 'echo start; (sleep 30; echo child-survived > /tmp/child) & sleep 30; echo end', timeoutSeconds: 1 });
  assert.equal(res.body.timedOut, true);
  assert.equal(res.body.stdout, 'start\n');
  assert.ok(res.body.durationMs >= 900 && res.body.durationMs < 10_000, String(res.body.durationMs));
  const ps = await exec({ command: 'ps -eo args 2>/dev/null || ls /proc' });
  assert.doesNotMatch(ps.body.stdout, /sleep 30/);
});

test('output beyond the cap is cut and flagged, per stream', async () => {
  const res = await exec({ command: 'head -c 10000 /dev/zero | tr "\\0" a; echo small >&2' });
  assert.equal(res.body.stdout.length, 2048);
  assert.equal(res.body.stdoutTruncated, true);
  assert.equal(res.body.stderr, 'small\n');
  assert.equal(res.body.stderrTruncated, false);
  assert.equal(res.body.exitCode, 0);
});

test("a small buffered answer, sent whole, is the output's TextDecoder text, as a paced one is", async () => {
  // A byte-order mark first (dropped), a NUL, a quote, a backslash, invalid bytes, a character cut short.
  const bytes = Buffer.from([0xef, 0xbb, 0xbf, 0x61, 0x00, 0x62, 0x22, 0x5c, 0xff, 0xfe, 0x63, 0xe2, 0x82]);
  const octal = [...bytes].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('');
  const res = await exec({ command: `printf '${octal}'; printf '${octal}' >&2` });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  const text = new TextDecoder('utf-8').decode(bytes);
  assert.equal(res.body.stdout, text);
  assert.equal(res.body.stderr, text);
  assert.deepEqual(Object.keys(res.body).slice(-2), ['stdout', 'stderr']);
  assert.equal(res.body.exitCode, 0);
});

test('streamed output comes in order as it is produced, with the exit line last', async () => {
  const lines = await streamLines({ command: 'echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three; exit 4' });
  const last = lines.at(-1);
  assert.deepEqual({ type: last.type, exitCode: last.exitCode, timedOut: last.timedOut }, { type: 'exit', exitCode: 4, timedOut: false });
  const data = lines.slice(0, -1).map((l) => `${l.type}:${l.data}`);
  assert.deepEqual(data, ['stdout:one\n', 'stderr:two\n', 'stdout:three\n']);
});

test('a streaming client that disconnects stops the command', async () => {
  const controller = new AbortController();
  const res = await fetch(`${stack.url}/v1/sandboxes/${sandbox.id}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify({ command: 'echo $$ > /tmp/streamed.pid; echo started; exec sleep 60' }),
    signal: controller.signal,
  });
  const reader = res.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  assert.match(first, /started/);
  controller.abort();
  let alive = 'alive';
  for (let i = 0; i < 50 && alive === 'alive'; i++) {
    await sleep(100);
    alive = (await exec({ command: 'kill -0 "$(cat /tmp/streamed.pid)" 2>/dev/null && echo alive || echo gone' })).body.stdout.trim();
  }
  assert.equal(alive, 'gone');
});

test('background processes keep running between execs', async () => {
  await exec({ command: 'sleep 120 >/dev/null 2>&1 & echo $! > /tmp/bg.pid' });
  await sleep(200);
  const check = await exec({ command: 'kill -0 "$(cat /tmp/bg.pid)" && echo alive' });
  assert.equal(check.body.stdout, 'alive\n');
});

test('exec on a destroyed sandbox is 409 sandbox_not_running; unknown and foreign sandboxes 404', async () => {
  const other = await newAccount(stack.url);
  assertProblem(await exec({ command: 'true' }, {}, other.key), 404, 'sandbox_not_found');
  assertProblem(await exec({ command: 'true' }, {}, owner.key, `sbx_${'0'.repeat(24)}`), 404, 'sandbox_not_found');
  const doomed = (await createSandbox(stack.url, owner.key)).body;
  await call(stack.url, 'DELETE', `/v1/sandboxes/${doomed.id}`, { token: owner.key });
  assertProblem(await exec({ command: 'true' }, {}, owner.key, doomed.id), 409, 'sandbox_not_running');
});

test('bad exec bodies answer 400 naming the field, and nothing runs', async () => {
  for (const body of [{}, { command: '' }, { command: [] }, { command: 'true', timeoutSeconds: -1 }, { command: 'true', timeoutSeconds: 100000 }, { command: 'true', env: { 'BAD NAME': 'x' } }, { command: 'true', shell: 'bash' }]) {
    assertProblem(await exec(body), 400, 'invalid_request');
  }
});
