import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { newId } from '../../shared/ids.ts';
import { createLocalRuntime, type LocalRuntimeOptions } from '../../shared/runtime/local/index.ts';
import { PermanentRuntimeError, SandboxGoneError } from '../../shared/runtime/types.ts';
import { findPrograms } from '../../shared/runtime/local/programs.ts';
import { SANDBOX_CA_PATH } from '../../shared/runtime/local/egress-ca.ts';
import { AGENT_PATH } from '../../shared/runtime/local/launch.ts';
import { hostProcesses } from '../helpers/processes.ts';
import { eventually } from '../helpers/eventually.ts';
import { run, setupLocalRuntime } from '../helpers/local-runtime.ts';

// The local runtime against real bubblewrap: every test has a dataDir and sandboxes of its own.

const RUNTIME_MODULE = new URL('../../shared/runtime/local/index.ts', import.meta.url).href;

async function readState(dataDir: string, id: string): Promise<{ pid: number; startTime: string }> {
  return JSON.parse(await readFile(join(dataDir, 'sandboxes', id, 'state.json'), 'utf8')) as { pid: number; startTime: string };
}

/** Host pids of processes that carry this sandbox's marker: its init, and bubblewrap watching it. */
function initsOf(id: string): number[] {
  return hostProcesses()
    .filter(({ args }) => (args[0] === '/bin/sh' || args[0] === AGENT_PATH) && args.includes(`paddock-sandbox-${id}`))
    .map((p) => p.pid);
}

test('create starts a running sandbox that get and list report', async (t) => {
  const { runtime } = await setupLocalRuntime(t);
  const id = newId('sbx');
  const created = await runtime.create({ id, accountId: 'acct_one', capSeconds: 600 });
  assert.deepEqual(created, { id, accountId: 'acct_one', status: 'running' });
  assert.deepEqual(await runtime.get(id), { id, accountId: 'acct_one', status: 'running' });
  assert.deepEqual(await runtime.list(), [{ id, accountId: 'acct_one', status: 'running' }]);
  assert.equal(await runtime.get(newId('sbx')), undefined);
  assert.equal((await run(runtime, id, ['echo', 'hello'])).stdout, 'hello\n');
});

test('create is idempotent: the existing sandbox is returned, not duplicated', async (t) => {
  const { runtime, options, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  await run(runtime, id, ['touch', 'marker']);
  const before = await readState(options.dataDir, id);
  assert.equal((await runtime.create({ id, accountId: 'acct_test', capSeconds: 600 })).status, 'running');
  assert.deepEqual(await readState(options.dataDir, id), before);
  assert.equal((await run(runtime, id, ['ls'])).stdout, 'marker\n');
  assert.deepEqual(initsOf(id), [before.pid]);
});

/** Creates the sandbox from another Node process, which must be able to exit once it has. */
async function createElsewhere(options: LocalRuntimeOptions, id: string): Promise<string> {
  const script = `
    import { createLocalRuntime } from ${JSON.stringify(RUNTIME_MODULE)};
    const runtime = createLocalRuntime(${JSON.stringify(options)});
    const sandbox = await runtime.create({ id: ${JSON.stringify(id)}, accountId: 'acct_test', capSeconds: 600 });
    process.stdout.write(sandbox.status);
  `;
  const other = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let said = '';
  other.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
  await new Promise((resolve) => other.on('close', resolve));
  return said;
}

test('a sandbox outlives the process that created it', async (t) => {
  const { runtime, options } = await setupLocalRuntime(t);
  const id = newId('sbx');
  assert.equal(await createElsewhere(options, id), 'running');
  assert.deepEqual(await runtime.get(id), { id, accountId: 'acct_test', status: 'running' });
  assert.equal((await run(runtime, id, ['echo', 'still here'])).stdout, 'still here\n');
});

test('concurrent creates of one id from two processes end with one sandbox', async (t) => {
  const { runtime, options } = await setupLocalRuntime(t);
  const id = newId('sbx');
  const [mine, theirs] = await Promise.all([
    runtime.create({ id, accountId: 'acct_test', capSeconds: 600 }),
    createElsewhere(options, id),
  ]);
  assert.equal(mine.status, 'running');
  assert.equal(theirs, 'running');
  const state = await readState(options.dataDir, id);
  assert.deepEqual(initsOf(id), [state.pid]);
  assert.equal((await runtime.list()).length, 1);
});

test('a creation its creator did not finish is reported failed, and a later create starts afresh', async (t) => {
  const { runtime, options } = await setupLocalRuntime(t);
  await runtime.list(); // lays out the dataDir
  const id = newId('sbx');
  // What a creator killed mid-way leaves: the directory, no state, and an init nobody recorded.
  await mkdir(join(options.dataDir, 'sandboxes', id, 'workspace'), { recursive: true });
  const orphan = spawn('/bin/sh', ['-c', 'sleep 1000', `paddock-sandbox-${id}`], { stdio: 'ignore' });
  t.after(() => orphan.kill('SIGKILL'));
  const orphanEnded = new Promise((resolve) => orphan.on('exit', resolve));
  assert.deepEqual(await runtime.get(id), { id, status: 'failed', reason: 'its creation was interrupted' });
  assert.equal((await runtime.create({ id, accountId: 'acct_test', capSeconds: 600 })).status, 'running');
  assert.equal(await orphanEnded, null, 'the orphan init was killed');
  assert.equal((await run(runtime, id, ['ls', '-A'])).stdout, '');
  assert.equal((await runtime.get(id))?.status, 'running');
});

test('destroy removes the sandbox; destroying it again, or an unknown id, resolves', async (t) => {
  const { runtime, options, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const { pid } = await readState(options.dataDir, id);
  await runtime.destroy(id);
  assert.equal(await runtime.get(id), undefined);
  assert.deepEqual(await runtime.list(), []);
  assert.equal(existsSync(join(options.dataDir, 'sandboxes', id)), false);
  // Its init has ended; bubblewrap, its parent, reaps it a moment later on a loaded machine.
  await eventually(`the init ${pid} reaped`, 5000, async () => (existsSync(`/proc/${pid}`) ? undefined : true), 50);
  await runtime.destroy(id);
  await runtime.destroy(newId('sbx'));
  await runtime.destroy('not an id');
});

test('exec reports the exit code and keeps stderr apart from stdout', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const result = await run(runtime, id, ['sh', '-c', 'echo out; echo err >&2; exit 3']);
  assert.equal(result.exitCode, 3);
  assert.equal(result.signal, null);
  assert.equal(result.timedOut, false);
  assert.equal(result.stdout, 'out\n');
  assert.equal(result.stderr, 'err\n');
  assert.ok(result.durationMs > 0 && result.durationMs < 10_000);
  assert.equal((await run(runtime, id, ['true'])).exitCode, 0);
});

test('exec feeds stdin, then closes it', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  assert.equal((await run(runtime, id, ['cat'], { stdin: new TextEncoder().encode('from stdin') })).stdout, 'from stdin');
  // Without input, stdin is at its end at once: a reader does not hang.
  assert.equal((await run(runtime, id, ['wc', '-c'], { timeoutMs: 5000 })).stdout.trim(), '0');
});

test('exec runs in /workspace by default, or in the cwd asked for', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  assert.equal((await run(runtime, id, ['pwd'])).stdout, '/workspace\n');
  await run(runtime, id, ['mkdir', 'sub']);
  assert.equal((await run(runtime, id, ['pwd'], { cwd: 'sub' })).stdout, '/workspace/sub\n');
  assert.equal((await run(runtime, id, ['pwd'], { cwd: '/tmp' })).stdout, '/tmp\n');
  const bad = await run(runtime, id, ['pwd'], { cwd: '/no/such/dir' });
  assert.notEqual(bad.exitCode, 0);
  assert.match(bad.stderr, /\/no\/such\/dir/);
});

test('exec gives a clean sandbox environment plus the env asked for, never the host process\'s', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  process.env.PADDOCK_TEST_HOST_SECRET = 'host-secret-value';
  t.after(() => delete process.env.PADDOCK_TEST_HOST_SECRET);
  const plain = await run(runtime, id, ['env']);
  // Where the host brokers credentials (root, with the network's programs and openssl), Node in
  // the sandbox trusts the egress's authority too (shared/runtime/local/egress-ca.ts).
  const programs = await findPrograms();
  const brokers = process.getuid?.() === 0 && Boolean(programs?.nft && programs.slirp4netns && programs.openssl);
  assert.deepEqual(plain.stdout.trim().split('\n').sort(), [
    'HOME=/workspace',
    'LANG=C.UTF-8',
    ...(brokers ? [`NODE_EXTRA_CA_CERTS=${SANDBOX_CA_PATH}`] : []),
    'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    'TERM=dumb',
  ]);
  if (brokers) assert.match((await run(runtime, id, ['cat', SANDBOX_CA_PATH])).stdout, /^-----BEGIN CERTIFICATE-----/);
  const withEnv = await run(runtime, id, ['sh', '-c', 'echo "$GREETING:$HOME:$PADDOCK_TEST_HOST_SECRET"'], {
    env: { GREETING: 'hi there', HOME: '/tmp' },
  });
  assert.equal(withEnv.stdout, 'hi there:/tmp:\n');
});

test('a program that does not exist exits 127 with a message, like a shell', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const result = await run(runtime, id, ['no-such-program', 'arg']);
  assert.equal(result.exitCode, 127);
  assert.match(result.stderr, /no-such-program/);
  const withEnv = await run(runtime, id, ['no-such-program'], { env: { A: 'b' } });
  assert.equal(withEnv.exitCode, 127);
  assert.match(withEnv.stderr, /no-such-program/);
});

test('a command ended by a signal reports the signal and no exit code', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const result = await run(runtime, id, ['sh', '-c', 'kill -TERM $$']);
  assert.equal(result.exitCode, null);
  assert.equal(result.signal, 'SIGTERM');
  assert.equal(result.timedOut, false);
});

test('a timeout kills the whole process tree and keeps the output so far', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const started = performance.now();
  const result = await run(runtime, id, ['sh', '-c', 'sleep 300 & echo $! > /tmp/child; echo started; sleep 300'], {
    timeoutMs: 500,
  });
  assert.equal(result.timedOut, true);
  assert.equal(result.exitCode, null);
  assert.equal(result.signal, 'SIGKILL');
  assert.equal(result.stdout, 'started\n');
  assert.ok(performance.now() - started < 5000);
  const child = (await run(runtime, id, ['cat', '/tmp/child'])).stdout.trim();
  assert.match(child, /^\d+$/);
  assert.notEqual((await run(runtime, id, ['kill', '-0', child])).exitCode, 0, 'the background child is gone');
  assert.doesNotMatch((await run(runtime, id, ['ps', '-eo', 'args'])).stdout, /sleep 300/);
});

test('aborting kills the process tree as a timeout does', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 300);
  const result = await run(runtime, id, ['sh', '-c', 'sleep 300 & sleep 300'], { signal: controller.signal });
  assert.equal(result.timedOut, false);
  assert.equal(result.signal, 'SIGKILL');
  assert.doesNotMatch((await run(runtime, id, ['ps', '-eo', 'args'])).stdout, /sleep 300/);
});

test('an already aborted request runs nothing', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const controller = new AbortController();
  controller.abort();
  const result = await run(runtime, id, ['touch', 'should-not-exist'], { signal: controller.signal });
  assert.equal(result.exitCode, null);
  assert.equal(result.timedOut, false);
  assert.equal((await run(runtime, id, ['ls', '-A'])).stdout, '');
});

test('argv and env values pass through verbatim, however large or odd', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const odd = ['with space', '"quotes"', "it's", '$HOME', '*', '-n', 'new\nline', 'é', 'A=B', ''];
  assert.equal((await run(runtime, id, ['printf', '[%s]', ...odd])).stdout, odd.map((a) => `[${a}]`).join(''));
  const env: Record<string, string> = {};
  for (let i = 0; i < 64; i++) env[`VAR_${i}`] = `${i}:${'é &?=%/$\n'.repeat(500)}`.slice(0, 4096);
  const printed = await run(runtime, id, ['printenv', 'VAR_63'], { env });
  assert.equal(printed.exitCode, 0);
  assert.equal(printed.stdout, `${env.VAR_63}\n`);
  assert.equal((await run(runtime, id, ['printf', '[%s]', ...odd], { env: { A: '1' } })).stdout, odd.map((a) => `[${a}]`).join(''));
});

test('large output arrives whole, even while a background process holds the pipes', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const expected = Array.from({ length: 200_000 }, (_, i) => `${i + 1}\n`).join('');
  assert.equal((await run(runtime, id, ['seq', '200000'])).stdout, expected);
  const held = await run(runtime, id, ['sh', '-c', 'sleep 100 & seq 200000; seq 200000 >&2']);
  assert.equal(held.exitCode, 0);
  assert.equal(held.stdout, expected);
  assert.equal(held.stderr, expected);
});

test('output is streamed as the command produces it', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const started = performance.now();
  let firstChunkAt = 0;
  const result = await runtime.exec(id, {
    argv: ['sh', '-c', 'echo one; sleep 1; echo two'],
    timeoutMs: 10_000,
    onStdout: () => void (firstChunkAt ||= performance.now() - started),
  });
  const finishedAt = performance.now() - started;
  assert.equal(result.exitCode, 0);
  assert.ok(firstChunkAt > 0 && finishedAt - firstChunkAt > 500, `first chunk at ${firstChunkAt} ms, end at ${finishedAt} ms`);
});

test('processes an exec leaves in the background keep running until the sandbox is destroyed', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const started = performance.now();
  // The background sleep inherits the exec's stdout: the exec must end anyway.
  const result = await run(runtime, id, ['sh', '-c', 'sleep 100 & nohup sleep 200 >/dev/null 2>&1 & echo spawned']);
  assert.equal(result.exitCode, 0);
  assert.equal(result.stdout, 'spawned\n');
  assert.ok(performance.now() - started < 2000);
  await delay(100);
  const ps = (await run(runtime, id, ['ps', '-eo', 'args'])).stdout;
  assert.match(ps, /^sleep 100$/m);
  assert.match(ps, /^sleep 200$/m);
});

test('exec on an unknown or destroyed sandbox rejects with SandboxGoneError', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  await assert.rejects(run(runtime, newId('sbx'), ['true']), SandboxGoneError);
  await assert.rejects(run(runtime, '../etc', ['true']), SandboxGoneError);
  const id = await sandbox();
  await runtime.destroy(id);
  await assert.rejects(run(runtime, id, ['true']), SandboxGoneError);
});

test('a second runtime on the same dataDir sees the sandbox, execs in it and destroys it', async (t) => {
  const { runtime, options, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  await run(runtime, id, ['sh', '-c', 'echo first > note']);
  const second = createLocalRuntime(options);
  t.after(() => second.close());
  assert.deepEqual(await second.get(id), { id, accountId: 'acct_test', status: 'running' });
  assert.deepEqual((await second.list()).map((s) => s.id), [id]);
  assert.equal((await run(second, id, ['cat', 'note'])).stdout, 'first\n');
  await second.destroy(id);
  assert.equal(await runtime.get(id), undefined);
  await assert.rejects(run(runtime, id, ['true']), SandboxGoneError);
});

test('a sandbox whose init died is reported failed, never running, until destroyed', async (t) => {
  const { runtime, options, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  await run(runtime, id, ['true']); // caches its state in this runtime
  const { pid } = await readState(options.dataDir, id);
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 200 && (await runtime.get(id))?.status === 'running'; i++) await delay(10);
  const sandboxNow = await runtime.get(id);
  assert.equal(sandboxNow?.status, 'failed');
  assert.ok(sandboxNow.reason);
  assert.equal((await runtime.list())[0]?.status, 'failed');
  await assert.rejects(run(runtime, id, ['true']), SandboxGoneError);
  await assert.rejects(runtime.create({ id, accountId: 'acct_test', capSeconds: 600 }), PermanentRuntimeError);
  await runtime.destroy(id);
  assert.equal(await runtime.get(id), undefined);
});
