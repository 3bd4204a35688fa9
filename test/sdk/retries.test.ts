import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PaddockApiError, PaddockClient } from '../../shared/sdk/index.ts';

// The SDK's retries: idempotent calls wait out a Retry-After and try again; anything
// else, or a wait longer than the client allows, is thrown at once; a signal cuts the wait short.

async function serve(answer: (req: IncomingMessage, res: ServerResponse, n: number) => void) {
  let n = 0;
  const seen: { method: string; at: number }[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method!, at: Date.now() });
    req.resume();
    answer(req, res, n++);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise((ok) => server.close(ok)) };
}

const busy = (res: ServerResponse, retryAfter: string, status = 503) =>
  res
    .writeHead(status, { 'content-type': 'application/problem+json', 'retry-after': retryAfter })
    .end(JSON.stringify({ type: 'about:blank', title: 'busy', status, code: status === 503 ? 'service_unavailable' : 'too_many_in_flight', detail: 'busy' }));

test('a GET answered 503 with Retry-After is retried after that wait, and succeeds', async (t) => {
  const api = await serve((_req, res, n) => (n < 2 ? busy(res, '1') : res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"sbx_1"}')));
  t.after(api.close);
  const client = new PaddockClient({ baseUrl: api.url, apiKey: 'pdk_live_x' });
  const sandbox = await client.getSandbox('sbx_1');
  assert.equal(sandbox.id, 'sbx_1');
  assert.equal(api.seen.length, 3);
  assert.ok(api.seen[1]!.at - api.seen[0]!.at >= 950, 'waited the Retry-After');
});

test('a POST without an idempotency key is not retried; with one it is', async (t) => {
  let creates = 0;
  const api = await serve((req, res) => {
    if (req.url!.includes('/exec') || creates++ === 0) busy(res, '1', 429);
    else res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"sbx_2"}');
  });
  t.after(api.close);
  const client = new PaddockClient({ baseUrl: api.url, apiKey: 'pdk_live_x' });
  await assert.rejects(client.exec('sbx_2', { command: 'true' }), (err) => err instanceof PaddockApiError && err.code === 'too_many_in_flight' && err.retryAfter === 1);
  assert.equal(api.seen.length, 1);
  const created = await client.createSandbox({ idempotencyKey: 'k-1' });
  assert.equal(created.id, 'sbx_2');
  assert.equal(api.seen.length, 3);
});

test('a Retry-After past the longest wait, or retries turned off, is thrown at once; a signal ends the wait', async (t) => {
  const api = await serve((_req, res) => busy(res, '5'));
  t.after(api.close);
  const impatient = new PaddockClient({ baseUrl: api.url, apiKey: 'pdk_live_x', maxRetryWaitSeconds: 2 });
  await assert.rejects(impatient.account(), PaddockApiError);
  assert.equal(api.seen.length, 1);
  await assert.rejects(new PaddockClient({ baseUrl: api.url, apiKey: 'pdk_live_x', retries: 0 }).account(), PaddockApiError);
  assert.equal(api.seen.length, 2);
  const patient = new PaddockClient({ baseUrl: api.url, apiKey: 'pdk_live_x' });
  const started = Date.now();
  await assert.rejects(patient.account({ signal: AbortSignal.timeout(300) }), (err: Error) => err.name === 'TimeoutError');
  assert.ok(Date.now() - started < 3000, 'the wait was cut short');
  assert.equal(api.seen.length, 3);
});

test('a DELETE whose connection closes before any answer is sent again; a plain POST is not', async (t) => {
  const api = await serve((req, res, n) => {
    // The first of each: the connection dropped, as a server closing a kept-alive one does.
    if (n === 0 || req.method === 'POST') return void req.socket.destroy();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"sbx_3","state":"destroyed"}');
  });
  t.after(api.close);
  const client = new PaddockClient({ baseUrl: api.url, apiKey: 'pdk_live_x' });
  assert.equal((await client.destroySandbox('sbx_3')).id, 'sbx_3');
  assert.deepEqual(api.seen.map((s) => s.method), ['DELETE', 'DELETE']);
  await assert.rejects(client.exec('sbx_3', { command: 'true' }), (err) => (err as Error).name === 'PaddockConnectionError');
  assert.deepEqual(api.seen.map((s) => s.method), ['DELETE', 'DELETE', 'POST']);
});

