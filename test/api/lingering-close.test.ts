import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { startTestApi } from '../helpers/stack.ts';
import { newAccount } from '../helpers/accounts.ts';

// An answer sent before the request's body was read (413, 404, 401, 415) must reach the client.
// The server used to close the connection at once with the body still arriving, and the kernel's
// reset for the unread bytes beat the answer: Node's fetch (undici, under the SDK and most
// JavaScript clients) failed with EPIPE where curl, which reads early answers, saw the 413. The
// close now lingers (api/lingering-close.ts): the rest of the body is read and dropped, within a
// bound of bytes and of time, and a client that goes on past the bound is cut.
//
// The clients run in a process of their own, as real ones do: in this one, the server and the
// client take turns on one event loop, and the client reads the answer before the reset lands.

const LINGER_SECONDS = 2;
const LINGER_BYTES = 8 * 1024 * 1024;
const api = await startTestApi({
  overrides: { PADDOCK_HTTP_LINGER_SECONDS: String(LINGER_SECONDS), PADDOCK_HTTP_LINGER_BYTES: String(LINGER_BYTES) },
});

interface Attempt {
  method?: string;
  path: string;
  bytes: number;
  headers?: Record<string, string>;
}

// Each attempt `times` over, one at a time, with Node's global fetch: the status and code of each
// answer, or the error's code.
const CLIENT = `
const [url, attempts, times] = [process.argv[1], JSON.parse(process.argv[2]), Number(process.argv[3])];
const results = [];
for (const a of attempts) {
  const body = Buffer.alloc(a.bytes, 0x20);
  for (let i = 0; i < times; i++) {
    try {
      const res = await fetch(url + a.path, { method: a.method ?? 'POST', headers: { 'content-type': 'application/json', ...a.headers }, body });
      const doc = await res.json();
      results.push({ path: a.path, outcome: res.status + ' ' + doc.code, type: res.headers.get('content-type') });
    } catch (err) {
      results.push({ path: a.path, outcome: 'error ' + (err.cause?.code ?? err.message) });
    }
  }
}
console.log(JSON.stringify(results));
`;

function fetchFromAnotherProcess(attempts: Attempt[], times: number): Promise<{ path: string; outcome: string; type?: string }[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', CLIENT, api.url, JSON.stringify(attempts), String(times)], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as { path: string; outcome: string }[]);
    });
  });
}

function assertAllAnswered(results: { path: string; outcome: string; type?: string }[], expected: Record<string, string>): void {
  for (const r of results) {
    assert.equal(r.outcome, expected[r.path], `${r.path}: ${JSON.stringify(results.filter((x) => x.path === r.path).map((x) => x.outcome))}`);
    assert.equal(r.type, 'application/problem+json');
  }
}

test("fetch sees the 413 of a 5 MB login body and the 404 of a 3 MiB body sent to an unknown route, not EPIPE", async () => {
  const results = await fetchFromAnotherProcess(
    [
      { path: '/v1/auth/login', bytes: 5_000_000 },
      { path: '/v1/no-such-route', bytes: 3 * 1024 * 1024 },
    ],
    4,
  );
  assertAllAnswered(results, { '/v1/auth/login': '413 payload_too_large', '/v1/no-such-route': '404 not_found' });
});

test('fetch sees other early answers whole too: a 401 for a missing or bad key on an upload, a 415 on an archive upload', async () => {
  const account = await newAccount(api.url, 'linger');
  const results = await fetchFromAnotherProcess(
    [
      { path: '/v1/secrets', bytes: 7_000_000 },
      { method: 'PUT', path: '/v1/sandboxes/sbx_nope/files/archive', bytes: 7_000_000, headers: { authorization: 'Bearer pdk_live_notakeyatall' } },
      { method: 'PUT', path: '/v1/sandboxes/sbx_nope/files/archive', bytes: 7_000_000, headers: { authorization: `Bearer ${account.key}` } },
    ],
    3,
  );
  const [missing, badKey, wrongType] = [results.slice(0, 3), results.slice(3, 6), results.slice(6)];
  assertAllAnswered(missing, { '/v1/secrets': '401 missing_credential' });
  assertAllAnswered(badKey, { '/v1/sandboxes/sbx_nope/files/archive': '401 invalid_credential' });
  assertAllAnswered(wrongType, { '/v1/sandboxes/sbx_nope/files/archive': '415 unsupported_media_type' });
});

/** A connection that keeps its side open when the server ends its own, as a client still sending does. */
async function open(): Promise<Socket> {
  const { port } = new URL(api.url);
  const socket = connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  return socket;
}

/** Resolves when the socket has closed, whether by an end or a reset. */
function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));
}

/** The server's side of the next connection it accepts. */
function nextServerSocket(): Promise<Socket> {
  return new Promise((resolve) => api.server.once('connection', resolve));
}

test('a client that goes on sending past the byte bound is cut there: the server reads no more than the bound', async () => {
  const accepted = nextServerSocket();
  const socket = await open();
  const server = await accepted;
  // A chunked body with no end, sent as fast as the server takes it.
  socket.write('POST /v1/secrets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
  const chunk = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 0x20), Buffer.from('\r\n')]);
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
  const pump = () => {
    while (!socket.destroyed && socket.write(chunk));
  };
  socket.on('drain', pump);
  const started = performance.now();
  pump();
  await closed(server);
  const ms = performance.now() - started;
  socket.destroy();
  assert.match(answer, /^HTTP\/1\.1 401 /);
  assert.match(answer, /"code":"missing_credential"/);
  assert.ok(server.bytesRead < LINGER_BYTES + 1024 * 1024, `the server read ${server.bytesRead} bytes`);
  assert.ok(server.bytesRead > LINGER_BYTES, `cut after ${server.bytesRead} bytes, before the bound`);
  assert.ok(ms < LINGER_SECONDS * 1000, `cut after ${ms} ms: by the time bound, not the byte bound`);
});

test('a client that trickles its body is cut at the time bound, and a body declared past the byte bound is not waited for', async () => {
  const socket = await open();
  socket.write('POST /v1/secrets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{');
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
  const timer = setInterval(() => socket.write(' '), 100);
  const started = performance.now();
  try {
    await closed(socket);
  } finally {
    clearInterval(timer);
  }
  const ms = performance.now() - started;
  assert.match(answer, /^HTTP\/1\.1 401 /);
  assert.ok(ms > LINGER_SECONDS * 1000 - 500 && ms < LINGER_SECONDS * 1000 + 2000, `closed after ${ms} ms`);

  const large = await open();
  large.write(`POST /v1/secrets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${LINGER_BYTES + 1}\r\n\r\n{`);
  const timerLarge = setInterval(() => large.write(' '), 100);
  const startedLarge = performance.now();
  try {
    await closed(large);
  } finally {
    clearInterval(timerLarge);
  }
  const msLarge = performance.now() - startedLarge;
  assert.ok(msLarge < 1000, `closed after ${msLarge} ms`);
});
