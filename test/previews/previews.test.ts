import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';

// Preview URLs (docs/api.md, "Preview URLs") through real HTTP: a program served from a sandbox,
// reached through the API's port with the preview's Host, as a browser on *.localhost reaches it.

const MAX_PORTS = 3;
const MAX_CONNECTIONS = 3;
const stack = await startSandboxStack({
  overrides: {
    PADDOCK_PREVIEW_MAX_PORTS: String(MAX_PORTS),
    PADDOCK_PREVIEW_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10',
  },
});
const api = new URL(stack.url);
const PROGRAM = readFileSync(new URL('./program.py', import.meta.url), 'utf8');

interface Session {
  account: TestAccount;
  id: string;
}

async function session(account?: TestAccount): Promise<Session> {
  const a = account ?? (await newAccount(stack.url, 'previews'));
  const s = await createSandbox(stack.url, a.key);
  assert.equal(s.status, 201, JSON.stringify(s.body));
  const put = await call(stack.url, 'PUT', `/v1/sandboxes/${s.body.id}/files?path=program.py`, { token: a.key, body: { content: PROGRAM } });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  return { account: a, id: s.body.id };
}

/** Starts the program on `address`:`port` in the sandbox and waits until it answers there. */
async function serve(s: Session, port: number, address = '127.0.0.1'): Promise<void> {
  const started = await call(stack.url, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: s.account.key, body: { command: ['python3', 'program.py', String(port), address], background: true } });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const probe = address.includes(':') ? `[${address}]` : address;
  await eventually(`the program on ${address}:${port}`, 20_000, async () => {
    const res = await call(stack.url, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: s.account.key, body: { command: ['python3', '-c', `import urllib.request; urllib.request.urlopen('http://${probe}:${port}/echo', timeout=2)`] } });
    return res.body.exitCode === 0 ? true : undefined;
  });
}

async function preview(s: Session, port: number, body: Record<string, unknown> = {}) {
  const res = await call(stack.url, 'POST', `/v1/sandboxes/${s.id}/previews`, { token: s.account.key, body: { port, ...body } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { port: number; url: string; token: string; signedUrl: string; public: boolean; expiresAt: string };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json(): any;
}

const hostOf = (s: Session, port: number) => `${port}-${s.id.slice(4)}.localhost:${api.port}`;

/** A request to the API's port with the preview's Host, as a browser on *.localhost sends it. */
function fetchPreview(host: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: Buffer; rawPath?: boolean } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // A connection of its own each: no request waits behind, or fails on, another's kept-alive socket.
    const req = request({ host: api.hostname, port: api.port, method: options.method ?? 'GET', path, headers: { host, ...options.headers }, setHost: false, agent: false });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode!, headers: res.headers, body, json: () => JSON.parse(body.toString()) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The answer as assertProblem reads one. */
const problemOf = (a: Answer) => {
  const headers = new Headers();
  for (const [name, value] of Object.entries(a.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  return { status: a.status, headers, body: a.json() };
};

test('a program on loopback is reached with its token; Paddock credentials stop at the proxy, the rest passes', async () => {
  const s = await session();
  await serve(s, 8000);
  const p = await preview(s, 8000);
  assert.equal(p.url, `http://${hostOf(s, 8000)}/`);
  assert.match(p.token, /^pvt_[A-Za-z0-9_-]{43}$/);
  assert.equal(p.public, false);
  assert.equal(p.signedUrl, `${p.url}?paddock_preview_token=${p.token}`);
  const listed = await call(stack.url, 'GET', `/v1/sandboxes/${s.id}/previews`, { token: s.account.key });
  assert.deepEqual(listed.body.data.map((x: any) => [x.port, x.url, x.public]), [[8000, p.url, false]]);
  assert.ok(!JSON.stringify(listed.body).includes(p.token));

  const res = await fetchPreview(hostOf(s, 8000), '/echo?q=1', {
    headers: {
      'x-paddock-preview-token': p.token,
      authorization: `Bearer ${s.account.key}`,
      cookie: `a=1; paddock_preview_token=${p.token}; b=2`,
      'x-forwarded-for': '203.0.113.9',
      'x-custom': 'kept',
    },
  });
  assert.equal(res.status, 200, res.body.toString());
  const seen = res.json();
  assert.equal(seen.path, '/echo?q=1');
  assert.equal(seen.headers.host, hostOf(s, 8000));
  assert.equal(seen.headers['x-custom'], 'kept');
  assert.equal(seen.headers.cookie, 'a=1; b=2');
  assert.equal(seen.headers.authorization, undefined);
  assert.equal(seen.headers['x-paddock-preview-token'], undefined);
  assert.notEqual(seen.headers['x-forwarded-for'], '203.0.113.9');
  assert.ok(!JSON.stringify(seen).includes(p.token), 'the token reached the program');
  assert.equal(res.headers['set-cookie']?.[0], 'app=1; Path=/', "the program's own headers pass unchanged");

  // A body streamed to the program, and a large answer streamed back, arrive whole.
  const sent = randomBytes(3 * 1024 * 1024);
  const posted = await fetchPreview(hostOf(s, 8000), '/count', { method: 'POST', body: sent, headers: { 'x-paddock-preview-token': p.token, 'content-type': 'application/octet-stream' } });
  assert.equal(posted.json().received, sent.length);
  const big = await fetchPreview(hostOf(s, 8000), '/big?mib=20', { headers: { 'x-paddock-preview-token': p.token } });
  assert.equal(big.status, 200);
  assert.equal(big.body.length, 20 * 1024 * 1024);
});

test('a program listening on ::1 only is reached too', async () => {
  const s = await session();
  await serve(s, 8001, '::1');
  const p = await preview(s, 8001);
  const res = await fetchPreview(hostOf(s, 8001), '/echo', { headers: { 'x-paddock-preview-token': p.token } });
  assert.equal(res.status, 200, res.body.toString());
});

test('refused: no token, the API key, another port\'s or sandbox\'s token, a whole URL in the request line; nothing listening is a 502; public needs no token', async () => {
  const s = await session();
  const other = await session(s.account);
  await serve(s, 8000);
  const p = await preview(s, 8000);
  const q = await preview(s, 8002);
  const o = await preview(other, 8000);
  const host = hostOf(s, 8000);
  assertProblem(problemOf(await fetchPreview(host, '/echo')), 401, 'preview_unauthorized');
  assertProblem(problemOf(await fetchPreview(host, '/echo', { headers: { authorization: `Bearer ${s.account.key}` } })), 401, 'preview_unauthorized');
  assertProblem(problemOf(await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': q.token } })), 401, 'preview_unauthorized');
  assertProblem(problemOf(await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': o.token } })), 401, 'preview_unauthorized');
  assertProblem(problemOf(await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': `pvt_${p.token[4] === 'A' ? 'B' : 'A'}${p.token.slice(5)}` } })), 401, 'preview_unauthorized');
  const page = await fetchPreview(host, '/', { headers: { accept: 'text/html' } });
  assert.equal(page.status, 401);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  // A request line naming a whole URL (another sandbox's, or the API's) reaches nothing.
  assertProblem(problemOf(await fetchPreview(host, `http://${hostOf(other, 8000)}/echo`, { headers: { 'x-paddock-preview-token': p.token } })), 400, 'invalid_request');
  // The API's own host with a preview's X-Forwarded-Host is the API's request.
  const spoofed = await fetchPreview(api.host, '/echo', { headers: { 'x-forwarded-host': host, 'x-paddock-preview-token': p.token } });
  assert.equal(spoofed.status, 404);
  assert.equal(spoofed.json().code, 'not_found');
  // Previewed, but nothing listens there.
  assertProblem(problemOf(await fetchPreview(hostOf(s, 8002), '/', { headers: { 'x-paddock-preview-token': q.token } })), 502, 'port_not_listening');
  // Any other host under the preview domain reaches neither a program nor the API's routes.
  for (const other of [`localhost.localhost:${api.port}`, `x.${hostOf(s, 8000)}`, `8000-${s.id}.localhost:${api.port}`, `70000-${s.id.slice(4)}.localhost:${api.port}`]) {
    for (const path of ['/healthz', '/v1/account', '/metrics']) {
      assertProblem(problemOf(await fetchPreview(other, path, { headers: { 'x-paddock-preview-token': p.token, authorization: `Bearer ${s.account.key}` } })), 404, 'not_found');
    }
  }
  // An unknown sandbox.
  assertProblem(problemOf(await fetchPreview(`8000-${'0'.repeat(24)}.localhost:${api.port}`, '/', { headers: { 'x-paddock-preview-token': p.token } })), 404, 'sandbox_not_found');
  // Public: no token; made private again, the token is needed again.
  await preview(s, 8000, { public: true });
  assert.equal((await fetchPreview(host, '/echo')).status, 200);
  await preview(s, 8000, { public: false });
  assertProblem(problemOf(await fetchPreview(host, '/echo')), 401, 'preview_unauthorized');
  // An earlier token stays valid until its own expiry.
  assert.equal((await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': p.token } })).status, 200);
});

test('a signed URL becomes a host-only HttpOnly cookie and a redirect to the clean URL', async () => {
  const s = await session();
  await serve(s, 8000);
  const p = await preview(s, 8000);
  const host = hostOf(s, 8000);
  const first = await fetchPreview(host, `/echo?x=1&paddock_preview_token=${p.token}`);
  assert.equal(first.status, 303);
  assert.equal(first.headers.location, '/echo?x=1');
  const cookie = first.headers['set-cookie']?.[0] ?? '';
  assert.match(cookie, new RegExp(`^paddock_preview_token=${p.token}; Path=/; HttpOnly`));
  assert.doesNotMatch(cookie, /domain=/i);
  const second = await fetchPreview(host, '/echo?x=1', { headers: { cookie: cookie.split(';')[0]! } });
  assert.equal(second.status, 200);
  assert.equal(second.json().headers.cookie, undefined);
  // A forged signed URL sets nothing.
  const forged = await fetchPreview(host, `/echo?paddock_preview_token=pvt_${'A'.repeat(43)}`);
  assert.equal(forged.status, 401);
  assert.equal(forged.headers['set-cookie'], undefined);
});

/** A WebSocket through the preview: sends `text`, answers the echoed frame's text. */
function webSocketEcho(host: string, token: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: api.hostname, port: api.port, path: '/ws', setHost: false, agent: false, headers: { host, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64'), 'x-paddock-preview-token': token } });
    req.on('upgrade', (res, socket: Socket, head: Buffer) => {
      assert.equal(res.statusCode, 101);
      const payload = Buffer.from(text);
      const mask = randomBytes(4);
      socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!))]));
      let got = head;
      socket.on('data', (c: Buffer) => {
        got = Buffer.concat([got, c]);
        if (got.length >= 2 && got.length >= 2 + got[1]!) {
          socket.destroy();
          resolve(got.subarray(2, 2 + got[1]!).toString());
        }
      });
      socket.on('error', reject);
    });
    req.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
}

test('a WebSocket goes through the preview both ways', async () => {
  const s = await session();
  await serve(s, 8000);
  const p = await preview(s, 8000);
  assert.equal(await webSocketEcho(hostOf(s, 8000), p.token, 'hello through'), 'echo:hello through');
});

/** A request that the program holds: resolves when the connection closes, however it does. */
function held(host: string, token: string): { closed: Promise<string> } {
  return {
    closed: new Promise((resolve) => {
      const req = request({ host: api.hostname, port: api.port, path: '/hold', setHost: false, agent: false, headers: { host, 'x-paddock-preview-token': token } });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body = (body + c.toString()).slice(0, 2000)));
        // A revocation cuts the answer with a reset: told by its close, as an end is.
        res.on('error', () => undefined);
        res.on('close', () => resolve(`answered ${res.statusCode} ${body}`));
      });
      req.on('error', (err) => resolve(`closed: ${err.message}`));
      req.end();
    }),
  };
}

test('revoking closes what is open through the preview and stops its tokens; its events are recorded', async () => {
  const s = await session();
  await serve(s, 8000);
  const p = await preview(s, 8000);
  const host = hostOf(s, 8000);
  const open = held(host, p.token);
  // The held request is at the program before the revocation.
  await eventually('the held request at the program', 10_000, async () => ((await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': p.token } })).status === 200 ? true : undefined));
  assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}/previews/8000`, { token: s.account.key })).status, 204);
  const how = await Promise.race([open.closed, new Promise<string>((r) => setTimeout(() => r('still open'), 15_000))]);
  assert.notEqual(how, 'still open');
  assertProblem(problemOf(await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': p.token } })), 401, 'preview_unauthorized');
  assertProblem(await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}/previews/8000`, { token: s.account.key }), 404, 'preview_not_found');
  const events = await call(stack.url, 'GET', `/v1/events?limit=1000`, { token: s.account.key });
  const types = (events.body.data ?? []).filter((e: any) => e.data?.preview?.sandboxId === s.id).map((e: any) => e.type);
  assert.ok(types.includes('preview.created') && types.includes('preview.revoked'), JSON.stringify(types));

  // A preview made again for the port never honours the old tokens.
  const again = await preview(s, 8000);
  assertProblem(problemOf(await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': p.token } })), 401, 'preview_unauthorized');
  assert.equal((await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': again.token } })).status, 200);

  // The sandbox destroyed: what is open closes, and the preview answers as an unknown sandbox.
  const open2 = held(host, again.token);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: s.account.key })).status, 200);
  const how2 = await Promise.race([open2.closed, new Promise<string>((r) => setTimeout(() => r('still open'), 15_000))]);
  assert.notEqual(how2, 'still open');
  assertProblem(problemOf(await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': again.token } })), 404, 'sandbox_not_found');
});

test(`at most ${MAX_PORTS} ports and ${MAX_CONNECTIONS} connections at once per sandbox`, async () => {
  const s = await session();
  await serve(s, 8000);
  for (const port of [8000, 8001, 8002]) await preview(s, port);
  const over = await call(stack.url, 'POST', `/v1/sandboxes/${s.id}/previews`, { token: s.account.key, body: { port: 8003 } });
  assertProblem(over, 429, 'preview_limit_reached');
  assert.equal(over.body.limit, MAX_PORTS);
  const p = await preview(s, 8000);
  const host = hostOf(s, 8000);
  // One more than the cap, at once: whichever comes last is refused, the others stay open.
  const holds = Array.from({ length: MAX_CONNECTIONS + 1 }, () => held(host, p.token));
  let ended = 0;
  for (const h of holds) void h.closed.then(() => ended++);
  const first = await Promise.race(holds.map((h) => h.closed));
  assert.match(first, /^answered 503 .*"code":"preview_busy"/);
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(ended, 1, 'a connection within the cap was closed');
  assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}/previews/8000`, { token: s.account.key })).status, 204);
  await Promise.all(holds.map((h) => h.closed));
  const q = await preview(s, 8000);
  await eventually('the places freed', 10_000, async () => ((await fetchPreview(host, '/echo', { headers: { 'x-paddock-preview-token': q.token } })).status === 200 ? true : undefined));
});

test('only the owner makes, lists and revokes previews; a key without previews:write cannot make one', async () => {
  const s = await session();
  const stranger = await newAccount(stack.url, 'previews-stranger');
  assertProblem(await call(stack.url, 'POST', `/v1/sandboxes/${s.id}/previews`, { token: stranger.key, body: { port: 8000 } }), 404, 'sandbox_not_found');
  assertProblem(await call(stack.url, 'GET', `/v1/sandboxes/${s.id}/previews`, { token: stranger.key }), 404, 'sandbox_not_found');
  await preview(s, 8000);
  assertProblem(await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}/previews/8000`, { token: stranger.key }), 404, 'sandbox_not_found');
  const readOnly = await call(stack.url, 'POST', '/v1/api-keys', { token: s.account.token, body: { name: 'ro', scopes: ['sandboxes:read'] } });
  assert.equal(readOnly.status, 201, JSON.stringify(readOnly.body));
  assertProblem(await call(stack.url, 'POST', `/v1/sandboxes/${s.id}/previews`, { token: readOnly.body.key, body: { port: 8001 } }), 403, 'insufficient_scope');
  assert.equal((await call(stack.url, 'GET', `/v1/sandboxes/${s.id}/previews`, { token: readOnly.body.key })).status, 200);
  for (const port of [0, 65_536, 1.5, '80']) {
    assertProblem(await call(stack.url, 'POST', `/v1/sandboxes/${s.id}/previews`, { token: s.account.key, body: { port } }), 400, 'invalid_request');
  }
});
