import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { constants } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { newId } from '../../shared/ids.ts';
import { frame, FrameReader } from '../../shared/runtime/local/agent/protocol.ts';
import { PortNotListeningError, SandboxGoneError } from '../../shared/runtime/types.ts';
import { eventually } from '../helpers/eventually.ts';
import { hostProcesses } from '../helpers/processes.ts';
import { run, setupLocalRuntime } from '../helpers/local-runtime.ts';
import { helloServer, listening, readAll, serveInSandbox } from '../helpers/sandbox-programs.ts';

// runtime.openPort on the local runtime: a connection made by the sandbox's agent from inside the
// sandbox (shared/runtime/local/agent/paddock-agent.c, "Ports"), its bytes relayed as they are.
// The programs here listen on port 0 inside the sandbox and print the port they got.

// A server that answers each connection with what it read, upper-cased, once the client has
// half-closed; then it closes its side.
const UPPER = (family: 'AF_INET' | 'AF_INET6', address: string): string =>
  listening(
    `
while True:
    c, _ = s.accept()
    data = b''
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        data += chunk
    c.sendall(data.upper())
    c.close()
`,
    { family, address, backlog: 8 },
  );

test('a program listening on 127.0.0.1 only is reached: an HTTP request and its answer go through, and the relay is the agent\'s child in the sandbox\'s groups', async (t) => {
  const { runtime, sandbox, options } = await setupLocalRuntime(t);
  const id = await sandbox();
  const server = await serveInSandbox(
    runtime,
    id,
    helloServer('hello from the sandbox\n'),
  );
  t.after(() => server.stop());
  const socket = await runtime.openPort!(id, server.port);
  // The relay: a process of the sandbox's, the agent's child, counted in exactly the groups the
  // agent is in (the sandbox's limits), running as the sandbox user.
  const { pid: initPid } = JSON.parse(await readFile(join(options.dataDir, 'sandboxes', id, 'state.json'), 'utf8')) as { pid: number };
  const children = hostProcesses().filter((p) => p.ppid === initPid && p.args[0] === '/.sandbox-init');
  assert.equal(children.length, 1, 'one relay, forked by the agent');
  const relay = children[0]!.pid;
  assert.equal(await readFile(`/proc/${relay}/cgroup`, 'utf8'), await readFile(`/proc/${initPid}/cgroup`, 'utf8'));
  assert.doesNotMatch(/^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${relay}/status`, 'utf8'))![1]!, /^0$/);

  socket.end('GET /hello.txt HTTP/1.0\r\nHost: sandbox\r\n\r\n');
  const answer = (await readAll(socket)).toString();
  assert.match(answer, /^HTTP\/1\.0 200 /);
  assert.match(answer, /\r\n\r\nhello from the sandbox\n$/);
  await eventually('the relay ends with its connection', 10_000, async () => (hostProcesses().some((p) => p.pid === relay) ? undefined : true));
});

test('a program listening on ::1 only is reached', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const server = await serveInSandbox(runtime, id, UPPER('AF_INET6', '::1'));
  t.after(() => server.stop());
  const socket = await runtime.openPort!(id, server.port);
  socket.end('over ipv6');
  assert.equal((await readAll(socket)).toString(), 'OVER IPV6');
});

test('a port nothing listens on rejects with PortNotListeningError; another sandbox\'s listener is not reached', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const [id, other] = await Promise.all([sandbox(), sandbox()]);
  // A port that was free a moment ago in this sandbox, taken in the other one.
  const server = await serveInSandbox(runtime, other, UPPER('AF_INET', '127.0.0.1'));
  t.after(() => server.stop());
  await assert.rejects(runtime.openPort!(id, server.port), PortNotListeningError);
  // The sandbox goes on: the same port of its neighbour is reached.
  const socket = await runtime.openPort!(other, server.port);
  socket.end('neighbour');
  assert.equal((await readAll(socket)).toString(), 'NEIGHBOUR');
});

test('half-close: the client ends its side, the program still answers, then both ends close', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const server = await serveInSandbox(runtime, id, UPPER('AF_INET', '127.0.0.1'));
  t.after(() => server.stop());
  const socket = await runtime.openPort!(id, server.port);
  const closed = once(socket, 'close');
  // Two writes and the end: the program reads to its end before it says anything.
  socket.write('half ');
  await delay(50);
  socket.end('closed');
  assert.equal((await readAll(socket)).toString(), 'HALF CLOSED');
  await closed;
  assert.equal(socket.destroyed, true);
});

test('50 MiB from the sandbox arrive whole, and a client that stops reading holds the program\'s writes', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const MIB = 1024 * 1024;
  const total = 50;
  const server = await serveInSandbox(
    runtime,
    id,
    listening(`
c, _ = s.accept()
block = bytes(range(256)) * 4096
for i in range(${total}):
    c.sendall(block)
    print(i + 1)
c.close()
`, { imports: ['sys'] }),
  );
  t.after(() => server.stop());
  const block = Buffer.alloc(MIB, Buffer.from(Array.from({ length: 256 }, (_, i) => i)));
  const expected = createHash('sha256');
  for (let i = 0; i < total; i++) expected.update(block);

  const socket = await runtime.openPort!(id, server.port);
  const hash = createHash('sha256');
  let received = 0;
  socket.on('data', (chunk: Buffer) => {
    hash.update(chunk);
    received += chunk.byteLength;
    // A few MiB in, the client stops reading.
    if (received >= 4 * MIB && received - chunk.byteLength < 4 * MIB) socket.pause();
  });
  const sent = (): number => Number(server.lines.at(-1) ?? 0);
  // Held: what the program has written stops growing, short of the whole.
  let last = -1;
  const held = await eventually('the program is held on its writes', 60_000, async () => {
    const now = sent();
    const stable = now === last && received >= 4 * MIB;
    last = now;
    return stable ? now : undefined;
  }, 1000);
  assert.ok(held < total, `the program wrote ${held} MiB of ${total} while the client did not read`);
  t.diagnostic(`held after ${held} MiB`);
  assert.equal(received >= 4 * MIB && received < 5 * MIB, true, `${received} bytes read before the pause`);
  const ended = once(socket, 'end');
  socket.resume();
  await ended;
  assert.equal(received, total * MIB);
  assert.equal(hash.digest('hex'), expected.digest('hex'));
  assert.equal(await server.exit, 0);
});

test("with reads: the program's bytes, its first ones sent before it read anything too, go into the caller's buffers, read after read, and false pauses them", async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const MIB = 1024 * 1024;
  const server = await serveInSandbox(
    runtime,
    id,
    listening(`
c, _ = s.accept()
c.sendall(b'hello first\\n')
c.recv(1)
block = bytes(range(256)) * 4096
for i in range(8):
    c.sendall(block)
c.close()
`),
  );
  t.after(() => server.stop());
  const block = Buffer.alloc(MIB, Buffer.from(Array.from({ length: 256 }, (_, i) => i)));
  const expected = createHash('sha256').update('hello first\n');
  for (let i = 0; i < 8; i++) expected.update(block);
  // Two buffers, handed out in turn: a chunk's memory is the next read's but one.
  const buffers = [Buffer.alloc(64 * 1024), Buffer.alloc(64 * 1024)];
  let handedOut = 0;
  const hash = createHash('sha256');
  let received = 0;
  let paused = false;
  let dataEvents = 0;
  let takenBeforeOpen = 0;
  let opened = false;
  const foreign: number[] = [];
  let chunks = 0;
  const socket = await runtime.openPort!(id, server.port, {
    reads: {
      buffer: () => buffers[handedOut++ % 2]!,
      take: (chunk) => {
        // The first bytes may have come with the agent's answer, and be handed on as a copy.
        if (!buffers.some((b) => b.buffer === chunk.buffer)) foreign.push(chunks);
        chunks++;
        if (!opened) takenBeforeOpen++;
        hash.update(chunk);
        received += chunk.byteLength;
        // A few MiB in, the caller stops taking them for a while.
        if (!paused && received >= 2 * MIB) {
          paused = true;
          setTimeout(() => socket.resume(), 300);
          return false;
        }
        return true;
      },
    },
  });
  opened = true;
  socket.on('data', () => dataEvents++);
  const ended = once(socket, 'end');
  socket.write('g');
  await ended;
  assert.equal(received, 12 + 8 * MIB);
  assert.equal(hash.digest('hex'), expected.digest('hex'));
  assert.ok(handedOut > 8 * 16, `buffers handed out for ${handedOut} reads`);
  assert.equal(dataEvents, 0, "no 'data' event with reads");
  assert.ok(foreign.length === 0 || (foreign.length === 1 && foreign[0] === 0), `chunks not in the caller's buffers: ${foreign.join(', ')} of ${chunks}`);
  assert.ok(paused);
  t.diagnostic(`${takenBeforeOpen} chunk(s) taken before the open resolved`);
  socket.destroy();
});

test('destroying the sandbox closes an open connection', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const server = await serveInSandbox(
    runtime,
    id,
    listening(`
c, _ = s.accept()
while True:
    chunk = c.recv(65536)
    if not chunk:
        break
    c.sendall(chunk)
`),
  );
  const socket = await runtime.openPort!(id, server.port);
  socket.write('ping');
  const [echo] = (await once(socket, 'data')) as [Buffer];
  assert.equal(echo.toString(), 'ping');
  const ended = once(socket, 'end');
  const failed = new Promise<NodeJS.ErrnoException>((resolve) => socket.once('error', resolve));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  await runtime.destroy(id);
  await ended;
  // Not a half-close: nothing is at the other end any more, so a write fails and the socket closes.
  socket.write('anyone?');
  assert.equal((await failed).code, 'EPIPE');
  await closed;
  await assert.rejects(runtime.openPort!(id, server.port), SandboxGoneError);
});

test('a sandbox that does not exist rejects with SandboxGoneError', async (t) => {
  const { runtime } = await setupLocalRuntime(t);
  await assert.rejects(runtime.openPort!(newId('sbx'), 8000), SandboxGoneError);
  await assert.rejects(runtime.openPort!('not-an-id', 8000), SandboxGoneError);
});

test('an abort rejects an open still under way and destroys an open connection; a listener that accepts nothing is a failure of its own', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  // A backlog of one that is never accepted: the first connection waits in it, and the next
  // one's SYN is dropped, so its connect waits.
  const server = await serveInSandbox(
    runtime,
    id,
    listening(`
time.sleep(600)
`, { backlog: 0, imports: ['time'] }),
  );
  t.after(() => server.stop());
  const opened = new AbortController();
  const waiting = await runtime.openPort!(id, server.port, { signal: opened.signal });
  const abort = new AbortController();
  const pending = runtime.openPort!(id, server.port, { signal: abort.signal });
  await delay(300);
  abort.abort();
  await assert.rejects(pending, { name: 'AbortError' });
  // Left alone, the agent gives up on it (a few seconds): not "nothing listens", which is untrue.
  await assert.rejects(runtime.openPort!(id, server.port), (err: Error) => !(err instanceof PortNotListeningError) && /timed out/i.test(err.message));
  const closed = once(waiting, 'close');
  opened.abort();
  await closed;
  await assert.rejects(runtime.openPort!(id, server.port, { signal: AbortSignal.abort() }), { name: 'AbortError' });
});

test('a sandbox made without the agent says its ports need the agent', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t, { agent: false });
  const id = await sandbox();
  await assert.rejects(runtime.openPort!(id, 8000), /sandbox agent/);
});

test('the relay is closed to the sandbox as the agent is; a program that kills it ends that connection only', async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox();
  const server = await serveInSandbox(runtime, id, UPPER('AF_INET', '127.0.0.1'));
  t.after(() => server.stop());
  const socket = await runtime.openPort!(id, server.port);
  const ended = new Promise((resolve) => socket.once('end', resolve));
  socket.resume();
  const probe = await run(runtime, id, [
    'python3',
    '-c',
    `
import os, signal, subprocess
relays = [p for p in os.listdir('/proc') if p.isdigit() and p != '1' and open(f'/proc/{p}/cmdline', 'rb').read().startswith(b'/.sandbox-init')]
print(len(relays))
for name in ['fd', 'maps', 'environ', 'mem']:
    try:
        os.listdir(f'/proc/{relays[0]}/{name}') if name == 'fd' else open(f'/proc/{relays[0]}/{name}', 'rb').read(1)
        print(name, 'open')
    except PermissionError:
        print(name, 'denied')
os.kill(int(relays[0]), signal.SIGKILL)
`,
  ]);
  assert.equal(probe.stdout, '1\nfd denied\nmaps denied\nenviron denied\nmem denied\n', probe.stderr);
  await ended;
  // The agent and the program go on: the next connection is served.
  const again = await runtime.openPort!(id, server.port);
  again.end('still here');
  assert.equal((await readAll(again)).toString(), 'STILL HERE');
});

test('a malformed port request is refused on its connection; the agent goes on serving', async (t) => {
  const { runtime, sandbox, options } = await setupLocalRuntime(t);
  const id = await sandbox();
  const answer = (bytes: Buffer) =>
    new Promise<{ type: string; errno: number }>((resolve, reject) => {
      const socket = connect(join(options.dataDir, 'sandboxes', id, 'agent.sock'));
      const frames = new FrameReader();
      socket.on('data', (chunk: Buffer) => {
        frames.push(chunk);
        const next = frames.next();
        if (next) resolve({ type: next.type, errno: next.payload.readUInt32LE(0) });
      });
      socket.on('error', reject);
      socket.on('close', () => reject(new Error('closed without an answer')));
      socket.write(bytes);
    });
  // A port of three bytes, and port 0.
  assert.deepEqual(await answer(frame('N', Buffer.from([1, 2, 3]))), { type: 'F', errno: constants.errno.EINVAL });
  assert.deepEqual(await answer(frame('N', Buffer.from([0, 0]))), { type: 'F', errno: constants.errno.EINVAL });
  assert.equal((await run(runtime, id, ['echo', 'still serving'])).stdout, 'still serving\n');
});

test('with the sandbox\'s network on, programs on every address and on ::1 are reached through its loopback', { skip: process.getuid?.() !== 0 && 'network needs root' }, async (t) => {
  const { runtime, sandbox } = await setupLocalRuntime(t);
  const id = await sandbox({ egress: 'all' });
  for (const [family, address] of [['AF_INET', '0.0.0.0'], ['AF_INET6', '::1']] as const) {
    const server = await serveInSandbox(runtime, id, UPPER(family, address));
    t.after(() => server.stop());
    const socket = await runtime.openPort!(id, server.port);
    socket.end(`on ${address}`);
    assert.equal((await readAll(socket)).toString(), `ON ${address}`.toUpperCase());
  }
});
