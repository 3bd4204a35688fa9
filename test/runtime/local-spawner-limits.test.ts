import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { hostProcesses } from '../helpers/processes.ts';

// The nsenter path (sandboxes without their agent: see local-agent.test.ts for the agent's).
// Descriptor exhaustion in the spawner: the commands that find no descriptors fail, and nothing
// else does (an 'error' listener attached after the first use of a child's streams let
// one EMFILE take down the spawner and every tenant's running command).

const RUNTIME_MODULE = new URL('../../shared/runtime/local/index.ts', import.meta.url).href;

test('a spawner out of descriptors fails the commands it cannot start and goes on serving', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'paddock-emfile-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  // The spawner inherits the limit of the process that forks it.
  const script = `
    import { createLocalRuntime } from ${JSON.stringify(RUNTIME_MODULE)};
    const runtime = createLocalRuntime({ dataDir: ${JSON.stringify(dataDir)}, memoryMb: 256, pidsMax: 512, agent: false });
    const id = 'sbx_emfile' + process.pid;
    await runtime.create({ id, accountId: 'acct_t', capSeconds: 120 });
    // Running before the flood begins (on a loaded host the spawner may start it late, and then
    // it is one of the commands that find no descriptors).
    let up;
    const running = new Promise((resolve) => (up = resolve));
    const first = runtime.exec(id, { argv: ['sh', '-c', 'echo up; exec sleep 3'], timeoutMs: 10_000, onStdout: () => up() });
    await running;
    const outcomes = await Promise.allSettled(Array.from({ length: 80 }, () => runtime.exec(id, { argv: ['sleep', '1'], timeoutMs: 10_000 })));
    const failed = outcomes.filter((o) => o.status === 'rejected').length;
    const survivor = await first;
    let out = '';
    const after = await runtime.exec(id, { argv: ['echo', 'still-here'], timeoutMs: 10_000, onStdout: (c) => void (out += Buffer.from(c)) });
    await runtime.destroy(id);
    await runtime.close();
    console.log(JSON.stringify({ failed, survivor: survivor.exitCode, after: after.exitCode, out }));
  `;
  const child = spawn('prlimit', ['--nofile=120:120', process.execPath, '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c));
  child.stderr.on('data', (c: Buffer) => (stderr += c));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 0, stderr);
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { failed: number; survivor: number; after: number; out: string };
  assert.ok(result.failed > 0, 'the limit was reached: some commands could not start');
  assert.ok(result.failed < 80, 'not every command failed');
  assert.equal(result.survivor, 0, 'a command already running was not taken down');
  assert.equal(result.after, 0);
  assert.equal(result.out, 'still-here\n');
});

test('commands timing out together are killed through their own groups: the spawner holds a bounded number of descriptors', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'paddock-killstorm-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const script = `
    import { createLocalRuntime } from ${JSON.stringify(RUNTIME_MODULE)};
    const runtime = createLocalRuntime({ dataDir: ${JSON.stringify(dataDir)}, memoryMb: 256, pidsMax: 512, agent: false });
    const id = 'sbx_killstorm' + process.pid;
    await runtime.create({ id, accountId: 'acct_t', capSeconds: 120 });
    // Each leaves a process in a session of its own behind, as a timeout's kill must still find.
    const results = await Promise.all(Array.from({ length: 40 }, () =>
      runtime.exec(id, { argv: ['sh', '-c', '(setsid sleep 60 &); sleep 60'], timeoutMs: 1500 })));
    let left = '';
    await runtime.exec(id, { argv: ['sh', '-c', 'ps -eo args | grep -c "^sleep 60" || true'], timeoutMs: 10_000, onStdout: (c) => void (left += Buffer.from(c)) });
    await runtime.destroy(id);
    await runtime.close();
    console.log(JSON.stringify({ timedOut: results.filter((r) => r.timedOut).length, left: left.trim() }));
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c));
  child.stderr.on('data', (c: Buffer) => (stderr += c));
  // The spawner is the script's child running spawner-main.ts: sample its descriptors throughout.
  let peak = 0;
  const sampler = setInterval(() => {
    for (const spawner of hostProcesses().filter((p) => p.ppid === child.pid && p.args.some((a) => a.includes('spawner-main.ts')))) {
      try {
        peak = Math.max(peak, readdirSync(`/proc/${spawner.pid}/fd`).length);
      } catch {
        // gone
      }
    }
  }, 2);
  const code = await new Promise((resolve) => child.on('exit', resolve));
  clearInterval(sampler);
  assert.equal(code, 0, stderr);
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { timedOut: number; left: string };
  assert.equal(result.timedOut, 40);
  assert.equal(result.left, '0', 'every process of the timed-out commands was killed, the setsid ones too');
  // Four pipes a command and the spawner's own: no scan of the host's process table per kill.
  assert.ok(peak > 40 && peak < 40 * 4 + 100, `the spawner held up to ${peak} descriptors`);
});

test('a command whose timeout comes before it has joined its group is still killed whole', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'paddock-earlykill-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  // A timeout of 1 ms fires while the command's first process is still on its way into its
  // cgroup (as any timeout may on a loaded host): the group is empty when the kill reads it.
  const script = `
    import { createLocalRuntime } from ${JSON.stringify(RUNTIME_MODULE)};
    const runtime = createLocalRuntime({ dataDir: ${JSON.stringify(dataDir)}, memoryMb: 256, pidsMax: 512, agent: false });
    const id = 'sbx_earlykill' + process.pid;
    await runtime.create({ id, accountId: 'acct_t', capSeconds: 120 });
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 20 }, () =>
      runtime.exec(id, { argv: ['sh', '-c', '(setsid sleep 60 &); sleep 60'], timeoutMs: 1 })));
    const ms = Date.now() - started;
    let left = '';
    await runtime.exec(id, { argv: ['sh', '-c', 'ps -eo args | grep -c "^sleep 60" || true'], timeoutMs: 10_000, onStdout: (c) => void (left += Buffer.from(c)) });
    await runtime.destroy(id);
    await runtime.close();
    console.log(JSON.stringify({ timedOut: results.filter((r) => r.timedOut).length, ms, left: left.trim() }));
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c));
  child.stderr.on('data', (c: Buffer) => (stderr += c));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 0, stderr);
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { timedOut: number; ms: number; left: string };
  assert.equal(result.timedOut, 20);
  assert.ok(result.ms < 30_000, `the timed-out commands answered after ${result.ms} ms: their sleeps ran on`);
  assert.equal(result.left, '0', 'nothing of the timed-out commands runs on');
});
