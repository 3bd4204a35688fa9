import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { exited } from '../helpers/processes.ts';
import { eventually } from '../helpers/eventually.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { createLocalRuntime } from '../../shared/runtime/local/index.ts';
import pg from 'pg';

// `npm start` on a host where other stacks run: its worker takes a free metrics port,
// and it says "Paddock is running" only once the web and the worker both are; a worker that
// cannot start stops the stack with a message instead.

const root = resolve(import.meta.dirname, '../..');

function startDevStack(extra: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ['scripts/dev-stack.ts'], {
    cwd: root,
    // DATABASE_URL and REDIS_URL name the test run's services: no cluster of its own.
    env: { ...process.env, PADDOCK_DATA_DIR: mkdtempSync(join(tmpdir(), 'paddock-devstack-')), ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  return { child, stdout: () => stdout, stderr: () => stderr };
}

test('two stacks on one host both run, each worker on a port of its own', { timeout: 120_000 }, async () => {
  const stacks = [startDevStack({ PORT: '0' }), startDevStack({ PORT: '0' })];
  try {
    for (const s of stacks) {
      await eventually('the stack says it runs', 60_000, async () => (/Paddock is running at (\S+)/.exec(s.stdout()) ? true : undefined));
      const url = /Paddock is running at (\S+)/.exec(s.stdout())![1]!;
      assert.equal((await fetch(`${url}/readyz`)).status, 200);
    }
    assert.ok(stacks.every((s) => s.child.exitCode === null), 'both stacks still run');
  } finally {
    for (const s of stacks) s.child.kill('SIGINT');
    const codes = await Promise.all(stacks.map((s) => exited(s.child)));
    assert.deepEqual(codes.map((c) => c.code), [0, 0], stacks.map((s) => s.stderr()).join('\n---\n'));
  }
});

test('Ctrl-C destroys the sandboxes the stack runs, records them destroyed, and leaves nothing running', { timeout: 180_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-devstack-'));
  const s = startDevStack({ PORT: '0', PADDOCK_DATA_DIR: dataDir });
  let url: string;
  try {
    await eventually('the stack says it runs', 60_000, async () => (/Paddock is running at (\S+)/.exec(s.stdout()) ? true : undefined));
    url = /Paddock is running at (\S+)/.exec(s.stdout())![1]!;
  } catch (err) {
    s.child.kill('SIGINT');
    throw err;
  }
  const account = await newAccount(url, 'devstack-ctrl-c');
  const created = await createSandbox(url, account.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const runtime = createLocalRuntime({ dataDir, memoryMb: 1024, pidsMax: 512 });
  try {
    assert.deepEqual((await runtime.list()).map((r) => r.id), [id]);
    s.child.kill('SIGINT');
    const { code } = await exited(s.child);
    assert.equal(code, 0, s.stderr());
    assert.match(s.stderr(), /destroying 1 sandbox…/);
    assert.doesNotMatch(s.stderr(), /could not destroy/);
    assert.deepEqual(await runtime.list(), [], 'a sandbox outlived the stack');
  } finally {
    await runtime.close();
  }
  const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await db.connect();
  try {
    const { rows } = await db.query('select state, status, destroy_reason from sandboxes where id = $1', [id]);
    assert.deepEqual(rows, [{ state: 'destroyed', status: 'terminated', destroy_reason: 'user' }]);
  } finally {
    await db.end();
  }
});

test('a Ctrl-C that also ends the reader of its output (npm start | tee) still stops everything', { timeout: 180_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-devstack-'));
  const s = startDevStack({ PORT: '0', PADDOCK_DATA_DIR: dataDir });
  await eventually('the stack says it runs', 60_000, async () => (/Paddock is running at (\S+)/.exec(s.stdout()) ? true : undefined));
  const url = /Paddock is running at (\S+)/.exec(s.stdout())![1]!;
  const account = await newAccount(url, 'devstack-tee');
  const created = await createSandbox(url, account.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const runtime = createLocalRuntime({ dataDir, memoryMb: 1024, pidsMax: 512 });
  try {
    // The reader goes first, as tee does: every later line of the stack meets a broken pipe.
    s.child.stdout.destroy();
    s.child.stderr.destroy();
    s.child.kill('SIGINT');
    const { code } = await exited(s.child);
    assert.equal(code, 0);
    assert.deepEqual(await runtime.list(), [], 'a sandbox outlived the stack');
  } finally {
    await runtime.close();
  }
});

test('a worker whose metrics port is taken stops the stack, which never says it runs', { timeout: 120_000 }, async () => {
  const holder = createServer();
  await new Promise<void>((ok) => holder.listen(0, ok));
  const taken = (holder.address() as { port: number }).port;
  try {
    const s = startDevStack({ PORT: '0', PADDOCK_WORKER_METRICS_PORT: String(taken) });
    const { code } = await exited(s.child);
    assert.equal(code, 1, s.stderr());
    assert.doesNotMatch(s.stdout(), /Paddock is running/);
    assert.match(s.stderr(), new RegExp(`metrics port ${taken} is taken: set PADDOCK_WORKER_METRICS_PORT`));
  } finally {
    holder.close();
  }
});

test('a port another process answers on is refused at once, never reported as this stack\'s', { timeout: 120_000 }, async () => {
  // An impostor that answers every request 200, /readyz included: a launcher that only checked
  // the port, then waited for something there to answer, said "running" at the impostor's URL.
  const impostor = createHttpServer((_req, res) => res.end('{"status":"ok"}'));
  await new Promise<void>((ok) => impostor.listen(0, '127.0.0.1', ok));
  const taken = (impostor.address() as { port: number }).port;
  try {
    const s = startDevStack({ PORT: String(taken) });
    const { code } = await exited(s.child);
    assert.equal(code, 1, s.stderr());
    assert.doesNotMatch(s.stdout(), /Paddock is running/);
    assert.match(s.stderr(), new RegExp(`port ${taken} on 127\\.0\\.0\\.1 is taken: set PORT`));
    assert.doesNotMatch(s.stderr(), /web\s/, 'no web was started');
  } finally {
    impostor.close();
  }
});

test('PORT that is not a port number is refused with the variable named', { timeout: 120_000 }, async () => {
  for (const bad of ['eighty', '65536']) {
    const s = startDevStack({ PORT: bad });
    const { code } = await exited(s.child);
    assert.equal(code, 1, s.stderr());
    assert.match(s.stderr(), new RegExp(`PORT must be a port number \\(0 picks any\\), not "${bad}"`));
  }
});
