import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { bindListener } from '../../scripts/listener.ts';
import { exited } from '../helpers/processes.ts';

// `npm start`'s port is bound by the launcher and handed to the web by descriptor: choosing a
// port and binding it are one step, so two launchers at once never both take the same one.

async function holdAnyPort(): Promise<{ port: number; close: () => void }> {
  const holder = createServer();
  await new Promise<void>((ok) => holder.listen(0, '127.0.0.1', ok));
  return { port: (holder.address() as { port: number }).port, close: () => holder.close() };
}

test('a taken preferred port falls through to the next choice; every choice taken is undefined', async () => {
  const held = await holdAnyPort();
  try {
    const fallback = await bindListener('127.0.0.1', [held.port, 0]);
    assert.ok(fallback);
    assert.notEqual(fallback.port, held.port);
    fallback.close();
    assert.equal(await bindListener('127.0.0.1', [held.port]), undefined);
  } finally {
    held.close();
  }
});

test('two binds of one free port at once: exactly one gets it, the other falls back', async () => {
  const free = await holdAnyPort();
  free.close();
  await new Promise((r) => setTimeout(r, 20));
  const both = await Promise.all([bindListener('127.0.0.1', [free.port, 0]), bindListener('127.0.0.1', [free.port, 0])]);
  try {
    const ports = both.map((l) => l!.port);
    assert.equal(ports.filter((p) => p === free.port).length, 1, `ports ${ports.join(', ')}`);
    assert.notEqual(ports[0], ports[1]);
  } finally {
    for (const l of both) l?.close();
  }
});

test('a child serves the handed socket after the launcher has let go of its copy', { timeout: 30_000 }, async () => {
  const listener = await bindListener('127.0.0.1', [0]);
  assert.ok(listener);
  const script = `
    const http = require('node:http');
    const server = http.createServer((req, res) => res.end('child ' + process.pid));
    server.listen({ fd: 3 }, () => process.stdout.write('listening\\n'));
    process.stdin.on('end', () => server.close());
    process.stdin.resume();
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit', listener.fd] });
  listener.close();
  try {
    await new Promise<void>((ok) => child.stdout!.once('data', () => ok()));
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`http://127.0.0.1:${listener.port}/`, { headers: { connection: 'close' } });
      assert.equal(await res.text(), `child ${child.pid}`);
    }
  } finally {
    child.stdin!.end();
    await exited(child);
  }
  // Nobody holds the port now: the launcher's copy was closed, the child's went with it.
  const again = await bindListener('127.0.0.1', [listener.port]);
  assert.ok(again, 'the port is free once the child is gone');
  again.close();
});
