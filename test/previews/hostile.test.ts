import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { eventually } from '../helpers/eventually.ts';
import { rawExchange, type RawExchangeResponse } from '../helpers/raw-http.ts';
import { localPreviewHost, openPreview, previewSession, servePreviewProgram, type PreviewSession } from '../helpers/previews.ts';

// Hostile traffic through previews (docs/api.md, "Preview URLs": untrusted internet traffic that
// holds nothing without bound), written byte by byte down raw sockets to the API's port: framing
// tricks reach nothing but their own port, slow clients and silent programs are cut within the
// server's and the proxy's bounds, a client that stops reading holds the program's writes, and the
// per-sandbox cap holds under a burst.

const MAX_CONNECTIONS = 4;
const IDLE_SECONDS = 6;
const stack = await startSandboxStack({
  overrides: {
    PADDOCK_PREVIEW_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
    PADDOCK_PREVIEW_IDLE_TIMEOUT_SECONDS: String(IDLE_SECONDS),
    PADDOCK_HTTP_HEADERS_TIMEOUT_SECONDS: '2',
    PADDOCK_HTTP_REQUEST_TIMEOUT_SECONDS: '4',
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10',
  },
});
const api = new URL(stack.url);
const PROGRAM = readFileSync(new URL('./hostile-program.py', import.meta.url), 'utf8');

interface Served extends PreviewSession {
  host: string;
  token: string;
}

async function served(options: { public?: boolean } = {}): Promise<Served> {
  const s = await previewSession(stack.url, { 'hostile-program.py': PROGRAM });
  await servePreviewProgram(stack.url, s, ['python3', 'hostile-program.py', '8000'], 8000, '/probe');
  const p = await openPreview(stack.url, s, 8000, options);
  return { ...s, host: localPreviewHost(stack.url, s.id, 8000), token: p.token };
}

/** One raw request (or several bytes' worth) down a fresh connection: the first answer. */
async function raw(bytes: string): Promise<RawExchangeResponse> {
  const [first] = await rawExchange(stack.url, Buffer.from(bytes, 'latin1'));
  assert.ok(first, `no answer to ${JSON.stringify(bytes.slice(0, 80))}`);
  return first;
}

/** A file the program keeps in its workspace (hostile-program.py), read through the files API. */
async function programFile(s: Served, path: string): Promise<string> {
  const res = await call(stack.url, 'GET', `/v1/sandboxes/${s.id}/files?path=${path}`, { token: s.account.key });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.content as string;
}

/** The request lines the program has read so far, on every connection. */
async function seen(s: Served): Promise<string[]> {
  return (await programFile(s, 'seen.log')).split('\n').filter(Boolean);
}

const codeOf = (res: RawExchangeResponse) => (res.body as { code?: string }).code;

/** Everything the API writes back to `bytes` down a fresh connection, until it closes; `onData` sees the text so far at each arrival. */
/** A chunked body's bytes, its framing taken off. */
function unchunked(body: string): string {
  let out = '';
  for (let at = 0; ; ) {
    const eol = body.indexOf('\r\n', at);
    const size = parseInt(body.slice(at, eol), 16);
    if (!(size > 0)) return out;
    out += body.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

function rawUntilClose(bytes: string, onData: (soFar: string) => void = () => undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(api.port), '127.0.0.1');
    let text = '';
    socket.write(bytes, 'latin1');
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      onData(text);
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.setTimeout(20_000, () => socket.destroy(new Error(`no close after ${JSON.stringify(text.slice(0, 200))}`)));
  });
}

test('framing tricks reach nothing but their own port: conflicting lengths, obs-fold, a body framed as a request, absolute-form, spoofed hosts', async () => {
  const s = await served();
  const other = await served({ public: true });
  const auth = `Host: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\n`;
  const smuggled = (tag: string) => `GET /smuggled-${tag} HTTP/1.1\r\nHost: ${other.host}\r\n\r\n`;

  // Refused by the server's parser before any routing: 400, nothing passed on.
  const refused: Record<string, string> = {
    'content-length then transfer-encoding': `POST /echo HTTP/1.1\r\n${auth}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled('clte')}`,
    'transfer-encoding then content-length': `POST /echo HTTP/1.1\r\n${auth}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n${smuggled('tecl')}`,
    'two different content-lengths': `POST /echo HTTP/1.1\r\n${auth}Content-Length: 0\r\nContent-Length: ${smuggled('cl2').length}\r\n\r\n${smuggled('cl2')}`,
    'two equal content-lengths': `POST /echo HTTP/1.1\r\n${auth}Content-Length: 0\r\nContent-Length: 0\r\n\r\n${smuggled('cl2same')}`,
    'a transfer-encoding not ending in chunked': `POST /echo HTTP/1.1\r\n${auth}Transfer-Encoding: chunked, identity\r\n\r\n${smuggled('teid')}`,
    'an obfuscated transfer-encoding': `POST /echo HTTP/1.1\r\n${auth}Transfer-Encoding: xchunked\r\n\r\n${smuggled('tex')}`,
    'obs-fold': `GET /echo HTTP/1.1\r\n${auth}X-Folded: a\r\n b\r\n\r\n`,
    'obs-fold hiding transfer-encoding': `POST /echo HTTP/1.1\r\n${auth}Content-Length: 0\r\nX-Padding: a\r\n Transfer-Encoding: chunked\r\n\r\n${smuggled('fold')}`,
    'a bare LF in a header line': `GET /echo HTTP/1.1\r\n${auth}X-Bare: a\nTransfer-Encoding: chunked\r\n\r\n${smuggled('lf')}`,
  };
  for (const [what, bytes] of Object.entries(refused)) {
    const res = await raw(bytes);
    assert.equal(res.status, 400, `${what}: ${res.head}`);
  }

  // Framed bodies that hold a request stay bodies: the program reads them as such, whatever the method or the Connection header lists.
  const inner = smuggled('body');
  const chunkedGet = await raw(`GET /echo HTTP/1.1\r\n${auth}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${inner.length.toString(16)}\r\n${inner}\r\n0\r\n\r\n`);
  assert.equal(chunkedGet.status, 200, chunkedGet.head);
  assert.equal((chunkedGet.body as { body: number }).body, inner.length);
  const listedLength = await raw(`GET /echo HTTP/1.1\r\n${auth}Content-Length: ${inner.length}\r\nConnection: close, content-length\r\n\r\n${inner}`);
  assert.equal(listedLength.status, 200, listedLength.head);
  assert.equal((listedLength.body as { body: number }).body, inner.length);

  // Absolute-form: aimed at another sandbox, or at the API, from a preview's Host: refused.
  const toOther = await raw(`GET http://${other.host}/echo HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`);
  assert.equal(toOther.status, 400);
  assert.equal(codeOf(toOther), 'invalid_request');
  const toApi = await raw(`GET ${stack.url}/v1/account HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`);
  assert.equal(toApi.status, 400);
  assert.equal(codeOf(toApi), 'invalid_request');
  // …and a preview's URL in absolute-form with the API's Host is the API's request (and not one of its routes).
  const viaApi = await raw(`GET http://${other.host}/echo HTTP/1.1\r\nHost: ${api.host}\r\nConnection: close\r\n\r\n`);
  assert.equal(viaApi.status, 404);
  assert.equal(codeOf(viaApi), 'not_found');

  // Host decides; X-Forwarded-Host is written anew, never believed.
  const spoofedToApi = await raw(`GET /echo HTTP/1.1\r\n${auth}X-Forwarded-Host: ${api.host}\r\nConnection: close\r\n\r\n`);
  assert.equal(spoofedToApi.status, 200);
  assert.equal((spoofedToApi.body as { headers: Record<string, string> }).headers['x-forwarded-host'], s.host);
  const spoofedFromApi = await raw(`GET /echo HTTP/1.1\r\nHost: ${api.host}\r\nX-Forwarded-Host: ${other.host}\r\nConnection: close\r\n\r\n`);
  assert.equal(spoofedFromApi.status, 404);
  // Two Host headers are not one request's.
  const twoHosts = await raw(`GET /echo HTTP/1.1\r\nHost: ${s.host}\r\nHost: ${other.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
  assert.equal(twoHosts.status, 400, twoHosts.head);
  // The other sandbox's host with this one's token: its own program only, and this token opens nothing there.
  const crossed = await raw(`GET /echo HTTP/1.1\r\nHost: ${other.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
  assert.equal(crossed.status, 200, 'the other preview is public');
  assert.equal((crossed.body as { headers: Record<string, string> }).headers['x-paddock-preview-token'], undefined);

  // The API's own routes answered none of the smuggled requests, and the programs read none.
  const lines = [...(await seen(s)), ...(await seen(other))];
  assert.deepEqual(lines.filter((l) => l.includes('smuggled')), [], lines.join('\n'));
  assert.ok(lines.filter((l) => l.startsWith('GET /echo ')).length >= 4, lines.join('\n'));
});

test("a program's status line with a control character in its reason passes with the status's own reason, and the API goes on", async () => {
  const s = await served();
  const res = await raw(`GET /badstatus HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
  assert.match(res.head, /^HTTP\/1\.1 200 OK\r\n/);
  assert.equal(res.body, 'ok');
  assert.equal((await call(stack.url, 'GET', '/healthz')).status, 200);
});

test("a program's chunked stream (server-sent events) reaches the client as it is written; interim answers, HEAD's bodiless answer, a handshake answered as a request, an answer ended by its close; an answer framed two ways is refused", async () => {
  const s = await served();
  // Each event as it comes, down a raw connection: the first long before the last is written.
  const arrivals: { at: number; text: string }[] = [];
  const text = await rawUntilClose(`GET /sse HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`, (soFar) => arrivals.push({ at: performance.now(), text: soFar }));
  assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, 'the interim answer is not passed on as the answer');
  assert.match(text, /\r\ncontent-type: text\/event-stream\r\n/i);
  assert.match(text, /\r\ntransfer-encoding: chunked\r\n/i);
  for (const i of [0, 1, 2]) assert.match(text, new RegExp(`data: ${i} `));
  const first = arrivals.find((a) => a.text.includes('data: 0 '))!;
  const last = arrivals.find((a) => a.text.includes('data: 2 '))!;
  assert.ok(last.at - first.at > 400, `the events arrived ${Math.round(last.at - first.at)} ms apart: held back, not streamed`);
  assert.ok(text.endsWith('0\r\n\r\n'), 'the stream ends as a chunked body does');

  // HEAD: the head alone, its length as the program told it, and the connection closed after it.
  const head = await rawUntilClose(`HEAD /big?mib=1 HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
  assert.match(head, /^HTTP\/1\.1 200 /);
  assert.match(head, /\r\ncontent-length: 1048576\r\n/i);
  assert.ok(head.endsWith('\r\n\r\n'), `bytes after the head: ${JSON.stringify(head.slice(-40))}`);

  // A WebSocket handshake the program answers as a plain request: that answer, as for any request.
  const plain = await raw(
    `GET /echo HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`,
  );
  assert.equal(plain.status, 200, plain.head);
  assert.match(plain.head, /\r\ncontent-type: application\/json\r\n/i);
  assert.equal((plain.body as { path?: string }).path, '/echo');

  // An answer framed by its connection's close: whole, as the client's own close frames it.
  const closed = await rawUntilClose(`GET /untilclose HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
  assert.match(closed, /^HTTP\/1\.1 200 OK\r\n/);
  // Framed anew for the client, in chunks.
  assert.match(closed, /\r\ntransfer-encoding: chunked\r\n/i);
  const closedBody = unchunked(closed.slice(closed.indexOf('\r\n\r\n') + 4));
  assert.ok(closedBody === Array.from({ length: 50 }, (_, i) => `${String(i).padStart(5, '0')}${'y'.repeat(4091)}`).join(''), `the body differs: ${closedBody.length} bytes`);

  const twice = await raw(`GET /twoframes HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
  assert.equal(twice.status, 502);
  assert.equal(codeOf(twice), 'port_not_listening');
});

test('a silent program: the request, and a WebSocket handshake, end within the idle timeout with 504', async () => {
  const s = await served();
  const plain = await raw(`GET /silent HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\n\r\n`);
  assert.equal(plain.status, 504, plain.head);
  assert.equal(codeOf(plain), 'operation_timed_out');
  const upgrade = await raw(
    `GET /silent HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`,
  );
  assert.equal(upgrade.status, 504, upgrade.head);
});

test('nothing listening, on either runtime: 502 port_not_listening for a request and for a WebSocket handshake', async () => {
  const s = await served();
  await openPreview(stack.url, s, 8001);
  const host = localPreviewHost(stack.url, s.id, 8001);
  const plain = await raw(`GET / HTTP/1.1\r\nHost: ${host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
  // The token is port 8000's: made again for 8001 it is that port's.
  assert.equal(plain.status, 401);
  const p = await openPreview(stack.url, s, 8001);
  const again = await raw(`GET / HTTP/1.1\r\nHost: ${host}\r\nX-Paddock-Preview-Token: ${p.token}\r\nConnection: close\r\n\r\n`);
  assert.equal(again.status, 502, again.head);
  assert.equal(codeOf(again), 'port_not_listening');
  const upgrade = await raw(
    `GET /ws HTTP/1.1\r\nHost: ${host}\r\nX-Paddock-Preview-Token: ${p.token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n\r\n`,
  );
  assert.equal(upgrade.status, 502, upgrade.head);
  assert.equal(codeOf(upgrade), 'port_not_listening');
});

test("a refused request opens nothing at the program: a token never valid, no connection; refused after it passed, one at most, with nothing sent; the refusal wins over a port where nothing listens", async () => {
  const s = await served();
  const lines = async () => (await programFile(s, 'connections.log')).split('\n').filter(Boolean);
  const get = (host: string, token: string) => raw(`GET /who HTTP/1.1\r\nHost: ${host}\r\nX-Paddock-Preview-Token: ${token}\r\nConnection: close\r\n\r\n`);
  const before = (await lines()).filter((l) => l === 'open').length;
  const forged = randomBytes(24).toString('base64url');
  for (let i = 0; i < 3; i++) assert.equal((await get(s.host, forged)).status, 401);
  assert.equal((await lines()).filter((l) => l === 'open').length, before, 'a token never valid opened a connection to the program');

  assert.equal((await get(s.host, s.token)).status, 200);
  assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}/previews/8000`, { token: s.account.key })).status, 204);
  for (let i = 0; i < 3; i++) {
    const refused = await get(s.host, s.token);
    assert.equal(refused.status, 401, refused.head);
    assert.equal(codeOf(refused), 'preview_unauthorized');
  }
  const opened = (await lines()).filter((l) => l === 'open').length - before;
  assert.ok(opened >= 1 && opened <= 2, `${opened} connections for one request let through and three refused`);
  assert.equal((await seen(s)).filter((l) => l.startsWith('GET /who')).length, 1);
  await eventually('every connection closed', 10_000, async () => {
    const closed = (await lines()).filter((l) => l.startsWith('closed')).length;
    return closed >= opened + before ? true : undefined;
  });

  // A port where nothing listens, once reached: revoked, its refusal is what the client hears.
  const p = await openPreview(stack.url, s, 8001);
  const host = localPreviewHost(stack.url, s.id, 8001);
  assert.equal(codeOf(await get(host, p.token)), 'port_not_listening');
  assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}/previews/8001`, { token: s.account.key })).status, 204);
  const refused = await get(host, p.token);
  assert.equal(refused.status, 401, refused.head);
  assert.equal(codeOf(refused), 'preview_unauthorized');
});

/** A connection to the API's port that writes `head`, then `trickle` one byte every `everyMs` until closed; resolves with what it read once closed. */
function slowClient(head: string, trickle: number, everyMs: number): { closed: Promise<{ read: string; sent: number }>; soFar: () => string } {
  const socket: Socket = connect(Number(api.port), api.hostname);
  let read = '';
  let sent = 0;
  socket.on('data', (c: Buffer) => (read += c.toString('latin1')));
  socket.on('error', () => undefined);
  socket.write(head);
  const timer = setInterval(() => {
    if (sent >= trickle || socket.destroyed) return;
    socket.write('x');
    sent += 1;
  }, everyMs);
  return {
    soFar: () => `${sent} sent, ${socket.destroyed ? 'closed' : 'open'}, read ${JSON.stringify(read.slice(0, 300))}`,
    closed: new Promise((resolve) => socket.once('close', resolve)).then(() => {
      clearInterval(timer);
      return { read, sent };
    }),
  };
}

test('slow clients hold nothing without bound: headers never finished, a body trickled past the request timeout, with every place of the cap taken', async () => {
  const s = await served();
  const unfinished = slowClient(`GET /echo HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nX-Slow: `, 10_000, 200);
  const bodyLength = 10_000;
  const trickled = Array.from({ length: MAX_CONNECTIONS }, () =>
    slowClient(`POST /echo HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nContent-Length: ${bodyLength}\r\n\r\n`, bodyLength, 200),
  );
  // Each trickling client holds a place at the program while it lasts.
  await eventually('the trickling clients at the program', 10_000, async () => ((await seen(s)).filter((l) => l.startsWith('POST /echo')).length === MAX_CONNECTIONS ? true : undefined));
  const busy = await raw(`GET /echo HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
  assert.equal(busy.status, 503, `${busy.head}; ${trickled.map((c) => c.soFar()).join('; ')}`);
  const header = await unfinished.closed;
  assert.doesNotMatch(header.read, /^HTTP\/1\.1 200/, 'the unfinished request reached the program');
  for (const client of trickled) {
    const { read, sent } = await client.closed;
    assert.ok(sent < bodyLength, 'the whole body was sent');
    assert.doesNotMatch(read, /^HTTP\/1\.1 200/);
  }
  // Cut, they hold nothing: the places are free again.
  await eventually('the places freed', 10_000, async () => {
    const res = await raw(`GET /echo HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
    return res.status === 200 ? true : undefined;
  });
  assert.ok(!(await seen(s)).some((l) => l.includes('X-Slow')));
});

test("a client that stops reading a large download holds the program's writes, and is cut once idle", async () => {
  const s = await served();
  const TOTAL_MIB = 2000;
  const socket = connect(Number(api.port), api.hostname);
  socket.on('error', () => undefined);
  socket.write(`GET /big?mib=${TOTAL_MIB} HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`);
  let received = 0;
  await new Promise<void>((resolve) => {
    socket.on('data', (c: Buffer) => {
      received += c.length;
      if (received >= 2 * 1024 * 1024 && received - c.length < 2 * 1024 * 1024) {
        socket.pause();
        resolve();
      }
    });
  });
  // A reset, as the proxy cuts an answer under way: 'error' then 'close'.
  const closed = new Promise((resolve) => socket.once('close', resolve));
  const written = async () => Number(await programFile(s, 'written'));
  let last = -1;
  const held = await eventually(
    "the program's writes held",
    IDLE_SECONDS * 1000,
    async () => {
      const now = await written();
      const stable = now === last;
      last = now;
      return stable ? now : undefined;
    },
    1000,
  );
  assert.ok(held < TOTAL_MIB / 4, `the program wrote ${held} MiB of ${TOTAL_MIB} while its client read 2`);
  // Nothing moves, so the idle timeout closes the connection: read again past it, what is left
  // is what was on its way, never the rest of the download. (A paused socket sees no close.)
  await delay((IDLE_SECONDS + 4) * 1000);
  socket.resume();
  await closed;
  assert.ok(received < TOTAL_MIB * 1024 * 1024, `the whole download arrived: ${received} bytes`);
  assert.ok((await written()) < TOTAL_MIB);
});

test(`the cap of ${MAX_CONNECTIONS} connections a sandbox holds under a burst`, async () => {
  const s = await served();
  const opens = async () => (await programFile(s, 'connections.log')).split('\n').filter((l) => l === 'open').length;
  const before = await opens();
  const BURST = 5 * MAX_CONNECTIONS;
  const answers = await Promise.all(
    Array.from({ length: BURST }, (_, i) => raw(`GET /silent?n=${i} HTTP/1.1\r\nHost: ${s.host}\r\nX-Paddock-Preview-Token: ${s.token}\r\nConnection: close\r\n\r\n`)),
  );
  const statuses = answers.map((a) => a.status).sort();
  assert.equal(statuses.filter((x) => x === 503).length, BURST - MAX_CONNECTIONS, statuses.join(','));
  assert.equal(statuses.filter((x) => x === 504).length, MAX_CONNECTIONS, statuses.join(','));
  assert.equal((await seen(s)).filter((l) => l.startsWith('GET /silent')).length, MAX_CONNECTIONS);
  // The requests over the cap never reached the program's port: refused before a connection was opened.
  assert.equal((await opens()) - before, MAX_CONNECTIONS, `connections opened for a burst of ${BURST}`);
});
