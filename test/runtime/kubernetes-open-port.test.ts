import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Writable, type Duplex } from 'node:stream';
import { PortForward } from '@kubernetes/client-node';
import WebSocket from 'ws';
import { newId } from '../../shared/ids.ts';
import { createKubernetesRuntime, podNameFor } from '../../shared/runtime/kubernetes/index.ts';
import { PortNotListeningError, SandboxGoneError, type SandboxRuntime } from '../../shared/runtime/types.ts';
import { startStandinFixture, type StandinFixture } from '../k8s-standin/fixture.ts';
import { eventually } from '../helpers/eventually.ts';
import { helloServer, listening, readAll, serveInSandbox, type Served } from '../helpers/sandbox-programs.ts';

// runtime.openPort on the kubernetes runtime: the pod's portforward subresource, against the API
// stand-in, whose pods are sandboxes of the local runtime (test/k8s-standin/port-forward.ts). The
// programs here run through the same runtime's exec, listen on port 0 of 127.0.0.1 inside the
// sandbox and print the port they got.

const NAMESPACE = 'paddock-test';

let fixture: StandinFixture;
let runtime: SandboxRuntime;

before(async () => {
  fixture = await startStandinFixture();
  runtime = createKubernetesRuntime({
    kubeConfig: fixture.standin.kubeConfig,
    namespace: NAMESPACE,
    defaultImage: 'docker.io/library/debian:bookworm-slim',
    allowedImages: [],
    resources: { cpuRequest: '250m', cpuLimit: '1', memoryRequest: '256Mi', memoryLimit: '1Gi' },
    deadlineGraceSeconds: 120,
  });
});
after(async () => {
  await runtime?.close();
  await fixture?.close();
});

async function sandbox(): Promise<string> {
  const id = newId('sbx');
  await runtime.create({ id, accountId: newId('acct'), capSeconds: 600 });
  return id;
}


/** What the connection's first read gives: its bytes, or how it failed (the open or the stream). */
async function outcomeOf(open: Promise<Duplex>): Promise<Buffer | Error> {
  try {
    return await readAll(await open);
  } catch (err) {
    return err as Error;
  }
}

// Echoes what it reads, as it reads it, until `size` bytes (its first line) have come back.
const ECHO = listening(`
while True:
    c, _ = s.accept()
    head = b''
    while b'\\n' not in head:
        chunk = c.recv(1)
        if not chunk: break
        head += chunk
    left = int(head or b'0')
    while left > 0:
        chunk = c.recv(min(left, 65536))
        if not chunk: break
        c.sendall(chunk)
        left -= len(chunk)
    c.close()
`, { backlog: 8 });

describe('openPort through the portforward subresource', () => {
  let id: string;
  let echo: Served;
  before(async () => {
    id = await sandbox();
    echo = await serveInSandbox(runtime, id, ECHO);
  });
  after(async () => {
    echo?.stop();
    await runtime.destroy(id);
  });

  test('reaches an HTTP server listening on 127.0.0.1 only, its answer whole', async () => {
    const web = await serveInSandbox(
      runtime,
      id,
      helloServer('hello from the pod\n'),
    );
    try {
      const stream = await runtime.openPort!(id, web.port);
      // Not end(): the protocol passes no half-close, and HTTP/1.0's close ends the exchange.
      stream.write('GET /hello.txt HTTP/1.0\r\nHost: preview\r\n\r\n');
      const answer = (await readAll(stream)).toString();
      assert.match(answer, /^HTTP\/1\.0 200 /);
      assert.match(answer, /\r\n\r\nhello from the pod\n$/);
    } finally {
      web.stop();
    }
  });

  test('nothing listening on the port: PortNotListeningError, before any byte', async () => {
    // The sandbox has a network namespace of its own, where nothing listens but its programs.
    const outcome = await outcomeOf(runtime.openPort!(id, 1));
    assert.ok(outcome instanceof PortNotListeningError, `got ${String(outcome)}`);
    // The connection's refusal is the port's, not the pod's: the same sandbox still answers.
    const again = await runtime.openPort!(id, echo.port);
    again.write('2\nok');
    assert.equal((await readAll(again)).toString(), 'ok');
  });

  test('a large transfer arrives whole, both ways at once', async () => {
    const size = 24 * 1024 * 1024;
    const payload = randomBytes(size);
    const stream = await runtime.openPort!(id, echo.port);
    const received = readAll(stream);
    stream.write(`${size}\n`);
    // Cut in uneven pieces, each written as the stream takes it.
    for (let at = 0; at < size; ) {
      const piece = payload.subarray(at, at + 100_000 + (at % 77_777));
      at += piece.length;
      if (!stream.write(piece)) await once(stream, 'drain');
    }
    const back = await received;
    assert.equal(back.length, size);
    assert.equal(createHash('sha256').update(back).digest('hex'), createHash('sha256').update(payload).digest('hex'));
  });

  test('a consumer that stops reading holds the program back, and then gets every byte', async () => {
    const total = 96 * 1024 * 1024;
    const flood = await serveInSandbox(
      runtime,
      id,
      listening(`
c, _ = s.accept()
block = bytes(range(256)) * 256
sent = 0
while sent < ${total}:
    c.sendall(block)
    sent += len(block)
    print(sent)
c.close()
`),
    );
    try {
      const stream = await runtime.openPort!(id, flood.port);
      stream.pause();
      // Nothing is read: what the program got out settles where the buffers on the way are full.
      let last = -1;
      const held = await eventually('the program is held back', 60_000, async () => {
        const sent = Number(flood.lines.at(-1) ?? 0);
        const settled = sent > 0 && sent === last;
        last = sent;
        return settled ? sent : undefined;
      }, 1000);
      assert.ok(held < total / 2, `the program got ${held} of ${total} bytes out while nothing was read`);
      assert.ok(stream.readableLength <= 1024 * 1024, `the stream holds ${stream.readableLength} bytes`);
      const all = await readAll(stream.resume());
      assert.equal(all.length, total);
      assert.ok(all.equals(Buffer.alloc(total, Buffer.from(Array.from({ length: 256 }, (_, i) => i)))), 'the bytes arrive in order');
    } finally {
      flood.stop();
    }
  });

  test('a program that stops reading holds the writer back', async () => {
    const total = 96 * 1024 * 1024;
    const sink = await serveInSandbox(
      runtime,
      id,
      listening(`
c, _ = s.accept()
time.sleep(600)
`, { imports: ['time'] }),
    );
    const stream = await runtime.openPort!(id, sink.port);
    const stop = new AbortController();
    let accepted = 0;
    // Written as a well-behaved writer does, waiting for 'drain' whenever write says so.
    const writing = (async () => {
      const piece = Buffer.alloc(64 * 1024, 7);
      while (accepted < total) {
        accepted += piece.length;
        if (!stream.write(piece)) await once(stream, 'drain', { signal: stop.signal });
      }
    })().catch(() => undefined);
    try {
      let last = -1;
      const held = await eventually('the writer is held back', 60_000, async () => {
        const settled = accepted > 0 && accepted === last;
        last = accepted;
        return settled ? accepted : undefined;
      }, 1000);
      assert.ok(held < total / 2, `the stream took ${held} of ${total} bytes while the program read nothing`);
      assert.ok(stream.writableLength <= 1024 * 1024, `the stream holds ${stream.writableLength} bytes`);
    } finally {
      stop.abort();
      stream.destroy();
      sink.stop();
      await writing;
    }
  });

  test('an aborted signal ends the open, or the connection it opened', async () => {
    const before = new AbortController();
    before.abort();
    await assert.rejects(runtime.openPort!(id, echo.port, { signal: before.signal }), { name: 'AbortError' });
    const during = new AbortController();
    const stream = await runtime.openPort!(id, echo.port, { signal: during.signal });
    stream.write('4\nab');
    const [first] = (await once(stream, 'data')) as [Buffer];
    assert.equal(first.toString(), 'ab');
    during.abort();
    await assert.rejects(readAll(stream), { name: 'AbortError' });
  });
});

test("with reads: the WebSocket's chunks go to take as they are (no buffer asked for), and false pauses them until resume", async () => {
  const id = await sandbox();
  const served = await serveInSandbox(
    runtime,
    id,
    listening(`
c, _ = s.accept()
for i in range(64):
    c.sendall(bytes([i]) * 65536)
c.close()
`),
  );
  const expected = createHash('sha256');
  for (let i = 0; i < 64; i++) expected.update(Buffer.alloc(65536, i));
  const hash = createHash('sha256');
  let received = 0;
  let asked = 0;
  let paused = false;
  const stream = await runtime.openPort!(id, served.port, {
    reads: {
      buffer: () => {
        asked++;
        return Buffer.alloc(65536);
      },
      take: (chunk) => {
        hash.update(chunk);
        received += chunk.byteLength;
        if (!paused && received >= 1024 * 1024) {
          paused = true;
          setTimeout(() => stream.resume(), 200);
          return false;
        }
        return true;
      },
    },
  });
  await once(stream, 'end');
  assert.equal(received, 64 * 65536);
  assert.equal(hash.digest('hex'), expected.digest('hex'));
  assert.equal(asked, 0);
  assert.ok(paused);
  stream.destroy();
});

test('destroying the sandbox ends a connection open into it', async () => {
  const id = await sandbox();
  const echo = await serveInSandbox(runtime, id, ECHO);
  const stream = await runtime.openPort!(id, echo.port);
  stream.write('1000\nhello');
  const [first] = (await once(stream, 'data')) as [Buffer];
  assert.equal(first.toString(), 'hello');
  const outcome = outcomeOf(Promise.resolve(stream));
  await runtime.destroy(id);
  const ended = await outcome;
  assert.ok(Buffer.isBuffer(ended) || ended instanceof SandboxGoneError, `got ${String(ended)}`);
  await assert.rejects(runtime.openPort!(id, echo.port), SandboxGoneError);
});

test('a sandbox that does not exist: SandboxGoneError', async () => {
  await assert.rejects(runtime.openPort!(newId('sbx'), 8000), SandboxGoneError);
  await assert.rejects(runtime.openPort!('not an id', 8000), SandboxGoneError);
  await assert.rejects(runtime.openPort!(newId('sbx'), 0), RangeError);
});

describe('the stand-in’s portforward, on the wire', () => {
  let id: string;
  before(async () => {
    id = await sandbox();
  });
  after(async () => {
    await runtime.destroy(id);
  });

  const url = (query: string) => `${fixture.standin.url.replace(/^http/, 'ws')}/api/v1/namespaces/${NAMESPACE}/pods/${podNameFor(id)}/portforward${query}`;
  const headers = () => ({ Authorization: `Bearer ${fixture.standin.token}` });

  test('opens each channel with the port, then tells a refused dial in the kubelet’s words and closes', async () => {
    const ws = new WebSocket(url('?ports=1'), ['v5.channel.k8s.io', 'v4.channel.k8s.io'], { headers: headers() });
    const frames: Buffer[] = [];
    ws.on('message', (data: Buffer) => frames.push(data));
    await once(ws, 'open');
    assert.equal(ws.protocol, 'v4.channel.k8s.io', 'v5 is exec’s alone');
    const [code] = (await once(ws, 'close')) as [number];
    assert.equal(code, 1000);
    assert.deepEqual(frames.slice(0, 2).map((f) => [...f]), [[0, 1, 0], [1, 1, 0]]);
    assert.equal(frames.length, 3);
    assert.equal(frames[2]![0], 1);
    assert.match(frames[2]!.subarray(1).toString(), /^error forwarding port 1 to pod .*: dial tcp4 127\.0\.0\.1:1: connect: connection refused/);
  });

  test('forwards every port asked for, each on its own pair of channels', async () => {
    const ws = new WebSocket(url('?ports=1&ports=2'), ['v4.channel.k8s.io'], { headers: headers() });
    const frames: Buffer[] = [];
    ws.on('message', (data: Buffer) => frames.push(data));
    const [code] = (await once(ws, 'close')) as [number];
    assert.equal(code, 1000);
    assert.deepEqual(frames.slice(0, 4).map((f) => [...f]), [[0, 1, 0], [1, 1, 0], [2, 2, 0], [3, 2, 0]]);
    const errors = new Map(frames.slice(4).map((f) => [f[0], f.subarray(1).toString()]));
    assert.deepEqual([...errors.keys()].sort(), [1, 3]);
    assert.match(errors.get(1)!, /^error forwarding port 1 to pod .*connection refused/);
    assert.match(errors.get(3)!, /^error forwarding port 2 to pod .*connection refused/);
  });

  test('client-node’s own PortForward hears a refusal on its error stream', async () => {
    let text = '';
    const errors = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        text += chunk.toString();
        callback();
      },
    });
    const ws = (await new PortForward(fixture.standin.kubeConfig).portForward(NAMESPACE, podNameFor(id)!, [1], new PassThrough(), errors, new PassThrough())) as WebSocket;
    if (ws.readyState !== ws.CLOSED) await once(ws, 'close');
    assert.match(text, /^error forwarding port 1 to pod .*: dial tcp4 127\.0\.0\.1:1: connect: connection refused/);
  });

  test('refuses what the kubelet refuses, before the upgrade', async () => {
    const refusal = (query: string, protocols: string[]) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(url(query), protocols, { headers: headers() });
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('open', () => reject(new Error('upgraded')));
        ws.on('error', () => undefined);
      });
    assert.equal(await refusal('', ['v4.channel.k8s.io']), 400);
    assert.equal(await refusal('?ports=0', ['v4.channel.k8s.io']), 400);
    assert.equal(await refusal('?ports=8000', ['v5.channel.k8s.io']), 400);
  });
});
