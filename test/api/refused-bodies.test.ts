import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startTestApi } from '../helpers/stack.ts';

// A body refused before it is read (401, 413, 429) still reaches the web: Node reads what the
// client sent until the connection closes, in chunks no code of Paddock sees. Those chunks live
// outside V8's heap, and nothing collected them until V8's own external-memory trigger, ~64 MB
// later, started a full collection: a client sending refused uploads as fast as it could made
// the web pause for one several times a second (the abuse bench's "10 MiB bodies" phase). The
// request frame now counts them when the connection ends (shared/reclaim.ts), so a scavenge frees
// them every few MiB; and it closes the connection once answered, so that nothing is drained.

const BLOCK = Buffer.alloc(256 * 1024, 'x');

/** One upload of `declared` bytes without credentials, sent until the server closes: its status. */
function refusedUpload(url: string, declared: number, request = 'POST /v1/secrets'): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    let head = '';
    const socket = connect(Number(port), hostname);
    const pump = (): void => {
      while (!socket.destroyed && socket.write(BLOCK));
    };
    socket.on('connect', () => {
      socket.write(`${request} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`);
      pump();
    });
    socket.on('drain', pump);
    socket.on('data', (chunk: Buffer) => (head += chunk.toString('latin1', 0, Math.min(chunk.length, 64))));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)));
  });
}

test("a flood of refused uploads keeps what the web read of them bounded outside the heap", async () => {
  const api = await startTestApi();
  // Warm: the first requests load code and fill pools.
  for (let i = 0; i < 5; i++) await refusedUpload(api.url, 64 * 1024 * 1024);
  const base = process.memoryUsage().arrayBuffers;
  let peak = base;
  const statuses = new Map<number, number>();
  for (let i = 0; i < 300; i++) {
    const status = await refusedUpload(api.url, 64 * 1024 * 1024);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    peak = Math.max(peak, process.memoryUsage().arrayBuffers);
  }
  // The client's own answers are tiny, and it sends one block again and again: what grows is
  // what the server read (37 MB here without the count, 3 with it).
  const extraMb = (peak - base) / 1024 / 1024;
  assert.ok((statuses.get(401) ?? 0) + (statuses.get(0) ?? 0) === 300, `refused, or cut while sending: ${JSON.stringify([...statuses])}`);
  assert.ok((statuses.get(401) ?? 0) > 0, `some refusals were seen whole: ${JSON.stringify([...statuses])}`);
  assert.ok(extraMb < 24, `dead chunks outside the heap peaked ${extraMb.toFixed(1)} MB over the start`);
});

test('a body sent to a route that takes none is not drained: answered, then the connection closed', async () => {
  const api = await startTestApi();
  // 16 GiB declared (more than loopback carries in the wait, so that the server cannot drain it
  // all and then close on the bytes past it) and sent as fast as the server takes it; draining it
  // to keep the connection read it all (256 MiB in 3 s, the connection still open).
  const status = await Promise.race([
    refusedUpload(api.url, 16 * 1024 ** 3, 'GET /healthz'),
    new Promise<string>((resolve) => setTimeout(() => resolve('still open after 5 s'), 5000)),
  ]);
  assert.equal(status, 200);
});
