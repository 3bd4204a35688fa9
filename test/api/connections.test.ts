import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { rawExchange } from '../helpers/raw-http.ts';
import { MAX_PIPELINED_PER_CONNECTION } from '../../api/server.ts';

// A stranger holding the API's connections: half-sent headers, trickled bodies after an
// early refusal, many idle connections from one address. Each must cost the server a bounded time
// and a bounded number of descriptors, and a neighbour must still be served. And a client is never
// reset for its number of connections: past its address's allowance it is answered, and served if
// it authenticates, the account's own limits deciding (accounts behind one address share none).

const PER_IP = 8;
const PER_ACCOUNT = 16;
const api = await startTestApi({
  overrides: {
    PADDOCK_HTTP_HEADERS_TIMEOUT_SECONDS: '1',
    PADDOCK_HTTP_REQUEST_TIMEOUT_SECONDS: '3',
    PADDOCK_HTTP_MAX_CONNECTIONS_PER_IP: String(PER_IP),
    PADDOCK_HTTP_MAX_CONNECTIONS_PER_ACCOUNT: String(PER_ACCOUNT),
    PADDOCK_HTTP_KEEPALIVE_TIMEOUT_SECONDS: '1',
  },
});
const { port } = new URL(api.url);

function open(): Promise<Socket> {
  const socket = connect(Number(port), '127.0.0.1');
  socket.on('error', () => undefined);
  return once(socket, 'connect').then(() => socket);
}

/** Resolves with what the server sent, and how long it took to close the connection. */
async function untilClosed(socket: Socket, limitMs: number): Promise<{ text: string; ms: number }> {
  const started = performance.now();
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  await Promise.race([
    once(socket, 'close'),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`still open after ${limitMs} ms`)), limitMs)),
  ]);
  return { text, ms: performance.now() - started };
}

test('a connection that never finishes its headers is closed after the headers timeout', async () => {
  const socket = await open();
  socket.write('GET /v1/account HTTP/1.1\r\nHost: x\r\nX-Slow: ');
  const timer = setInterval(() => socket.write('a'), 200); // trickling, but never done
  try {
    const { ms } = await untilClosed(socket, 8000);
    assert.ok(ms < 6000, `closed after ${ms} ms`);
  } finally {
    clearInterval(timer);
    socket.destroy();
  }
});

test('an early 401 closes the connection instead of waiting for a trickled body', async () => {
  const socket = await open();
  socket.write('POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":');
  const timer = setInterval(() => socket.write(' '), 200);
  try {
    const { text, ms } = await untilClosed(socket, 8000);
    assert.match(text, /^HTTP\/1\.1 401 /);
    assert.match(text, /\r\nconnection: close\r\n/i);
    assert.ok(ms < 2500, `closed after ${ms} ms`);
  } finally {
    clearInterval(timer);
    socket.destroy();
  }
});

/** Waits until the server holds no connection (those of earlier tests have timed out). */
async function quiet(): Promise<void> {
  const count = () => new Promise<number>((resolve, reject) => api.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
  const deadline = Date.now() + 10_000;
  while ((await count()) > 0) {
    if (Date.now() > deadline) throw new Error('connections still open after 10 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Many requests at once with Node's fetch (one connection each): each one's status and code, or its error. */
async function burst(count: number, path: string, key: string): Promise<{ status?: number; code?: string; retryAfter?: string | null; error?: string }[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      try {
        const res = await fetch(new URL(path, api.url), { headers: { authorization: `Bearer ${key}` } });
        const body = (await res.json()) as { code?: string };
        return { status: res.status, code: body.code, retryAfter: res.headers.get('retry-after') };
      } catch (err) {
        return { error: (err as { cause?: { code?: string } }).cause?.code ?? String(err) };
      }
    }),
  );
}

test('past the per-address allowance a connection is answered, not reset: 503 server_busy unless it authenticates, then the account is served', async () => {
  const account = await newAccount(api.url, 'allowance');
  await quiet();
  const sockets: Socket[] = [];
  // One at a time, each accepted before the next: the server counts in the order it accepts.
  for (let i = 0; i < PER_IP; i++) {
    sockets.push(await open());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  try {
    const refusals = [
      'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /v1/no-such-route HTTP/1.1\r\nHost: x\r\n\r\n',
      // A route that takes no credential is not served, whatever the request carries.
      `POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${account.key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
      // Nor is a credential that does not authenticate.
      'GET /v1/account HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer pdk_live_notakeyatall\r\n\r\n',
    ];
    for (const request of refusals) {
      const [busy] = await rawExchange(api.url, request);
      assertProblem(busy!, 503, 'server_busy');
      assert.equal(busy!.headers.get('retry-after'), '1');
      assert.equal(busy!.headers.get('connection'), 'close', 'the connection is not kept past its one answer');
    }
    // The account's own requests are served on such a connection, several on one connection.
    const [first, second] = await rawExchange(api.url, `GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${account.key}\r\n\r\n`.repeat(2), 2);
    assert.equal(first?.status, 200);
    assert.equal(second?.status, 200);
    // A freed place in the allowance is taken by the next connection, served without credentials.
    sockets.pop()!.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const [health] = await rawExchange(api.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(health?.status, 200);
  } finally {
    for (const s of sockets) s.destroy();
    await quiet(); // the next tests sign up, without credentials, from this address
  }
});

/** Every request answered: 200, or 429 with Retry-After for a limit of the account's own; the codes seen. */
function assertAllAnswered(results: Awaited<ReturnType<typeof burst>>): Map<string, number> {
  assert.deepEqual(results.filter((r) => r.error), [], 'no request failed without an answer');
  const seen = new Map<string, number>();
  for (const r of results) {
    const outcome = r.status === 200 ? '200' : `${r.status} ${r.code}`;
    seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
    if (r.status === 200) continue;
    assert.ok(['429 rate_limited', '429 too_many_in_flight'].includes(outcome), JSON.stringify(r));
    assert.match(r.retryAfter ?? '', /^\d+$/);
  }
  return seen;
}

test('300 requests at once with one key from one address are all answered, 200 or 429 with Retry-After: none is reset', async () => {
  const account = await newAccount(api.url, 'burst');
  const seen = assertAllAnswered(await burst(300, '/v1/account', account.key));
  assert.ok((seen.get('200') ?? 0) > 0, JSON.stringify([...seen]));
  // Its bucket (120 a minute) and its connections (64 at once) are the account's limits.
  assert.ok((seen.get('429 rate_limited') ?? 0) + (seen.get('429 too_many_in_flight') ?? 0) > 0, JSON.stringify([...seen]));
});

test("accounts behind one address have limits of their own: one's flood does not fail the other's requests", async () => {
  const [flooder, neighbour] = await Promise.all([newAccount(api.url, 'flooder'), newAccount(api.url, 'neighbour')]);
  // The neighbour within its own allowances (bucket and connections): every request served.
  const [flood, own] = await Promise.all([burst(200, '/v1/account', flooder.key), burst(PER_ACCOUNT / 2, '/v1/account', neighbour.key)]);
  assert.deepEqual(own.map((r) => r.status ?? r.error), Array(PER_ACCOUNT / 2).fill(200));
  assertAllAnswered(flood);
});

/** One request on an open connection, kept open: the answer's status, head and JSON body. */
function ask(socket: Socket, request: string): Promise<{ status: number; head: string; body: any }> {
  return new Promise((resolve) => {
    let received = '';
    const onData = (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = received.slice(0, end);
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (received.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve({ status: Number(head.slice(9, 12)), head, body: JSON.parse(received.slice(end + 4, end + 4 + length)) });
    };
    socket.on('data', onData);
    socket.write(request);
  });
}

test("an account's connections past its own allowance are answered 429 too_many_in_flight, whatever its address; its neighbour's are served", async () => {
  const [heavy, light] = await Promise.all([newAccount(api.url, 'heavy'), newAccount(api.url, 'light')]);
  const get = (key: string) => `GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`;
  await quiet();
  const sockets: Socket[] = [];
  try {
    for (let i = 0; i < PER_ACCOUNT; i++) {
      sockets.push(await open());
      assert.equal((await ask(sockets[i]!, get(heavy.key))).status, 200);
    }
    const extra = await open();
    sockets.push(extra);
    const refused = await ask(extra, get(heavy.key));
    assert.equal(refused.status, 429);
    assert.equal(refused.body.code, 'too_many_in_flight');
    assert.deepEqual([refused.body.kind, refused.body.scope, refused.body.limit], ['connections', 'account', PER_ACCOUNT]);
    assert.match(refused.head, /\r\nretry-after: 1\r\n/i);
    // On a connection past the address's allowance too, the account's own limit is what answers.
    for (let i = 0; i < PER_IP; i++) sockets.push(await open());
    const onProbation = await open();
    sockets.push(onProbation);
    const refusedOnProbation = await ask(onProbation, get(heavy.key));
    assert.deepEqual([refusedOnProbation.status, refusedOnProbation.body.code], [429, 'too_many_in_flight']);
    for (const idle of sockets.splice(PER_ACCOUNT + 1)) idle.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The neighbour, from the same address, has an allowance of its own.
    const other = await open();
    sockets.push(other);
    assert.equal((await ask(other, get(light.key))).status, 200);
    // A connection closed gives its place back.
    sockets.shift()!.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal((await ask(extra, get(heavy.key))).status, 200);
  } finally {
    for (const s of sockets) s.destroy();
    await quiet();
  }
});

test('many connections trickling their headers are all closed by the headers timeout, and an account is served meanwhile', async () => {
  const account = await newAccount(api.url, 'slowloris');
  // They never read: a stranger does not take its answer, nor close.
  const sockets = await Promise.all(Array.from({ length: PER_IP * 3 }, () => open()));
  for (const s of sockets) s.write('GET /v1/account HTTP/1.1\r\nHost: x\r\nX-Slow: ');
  const timer = setInterval(() => {
    for (const s of sockets) if (!s.destroyed) s.write('a');
  }, 200);
  try {
    const served = await call(api.url, 'GET', '/v1/account', { token: account.key });
    assert.equal(served.status, 200);
    const started = performance.now();
    await Promise.all(sockets.map((s) => new Promise((resolve) => (s.destroyed ? resolve(undefined) : s.once('close', resolve)))));
    assert.ok(performance.now() - started < 6000, 'closed within the headers timeout and its check interval');
  } finally {
    clearInterval(timer);
    for (const s of sockets) s.destroy();
    await quiet();
  }
});

test('a JSON body nested too deep or too wide is refused while it is read, naming the field', async () => {
  const account = await newAccount(api.url, 'shape');
  const deep = await call(api.url, 'POST', '/v1/sandboxes', { token: account.key, body: `{"metadata": ${'['.repeat(40)}${']'.repeat(40)}}` });
  assert.equal(deep.status, 400);
  assert.equal(deep.body.code, 'invalid_request');
  assert.equal(deep.body.errors[0].field, 'metadata');
  const wide = await call(api.url, 'POST', '/v1/sandboxes', { token: account.key, body: `{"env": [${Array(30_000).fill('1').join(',')}]}` });
  assert.equal(wide.status, 400);
  assert.equal(wide.body.errors[0].field, 'env');
  assert.match(wide.body.detail, /more than 20000 values/);
});

test('requests pipelined past the bound on one connection close it, unanswered past the bound; a few pipelined are all answered', async () => {
  const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
  await quiet(); // within the address's allowance, so that requests without credentials are served
  const few = await open();
  let fewAnswers = '';
  few.on('data', (d: Buffer) => (fewAnswers += d.toString('latin1')));
  few.write(request.repeat(8));
  // Answers follow each other with no line break between them (a body, then the next status line).
  await until(() => (fewAnswers.match(/HTTP\/1\.1 200 /g)?.length ?? 0) === 8);
  assert.equal(few.destroyed, false, 'a client with a few in flight keeps its connection');
  few.destroy();

  const flood = await open();
  let answers = '';
  flood.on('data', (d: Buffer) => (answers += d.toString('latin1')));
  // Reset by the server, not ended: `once` would reject on the reset's error event.
  const closed = new Promise((resolve) => flood.once('close', resolve));
  flood.write(request.repeat(20_000));
  await closed;
  const answered = answers.match(/HTTP\/1\.1 \d{3} /g)?.length ?? 0;
  assert.ok(answered <= MAX_PIPELINED_PER_CONNECTION, `${answered} answers on a flooded connection`);
  // A neighbour is served, on a connection of its own.
  assert.equal((await call(api.url, 'GET', '/healthz')).status, 200);
});

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('not in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a client that closes its connection in the middle of its body is no 5xx of the service', async () => {
  const account = await newAccount(api.url, 'aborted-body');
  for (let i = 0; i < 3; i++) {
    const socket = await open();
    socket.write(`PUT /v1/allowlist HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${account.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"comma`);
    await new Promise((r) => setTimeout(r, 100));
    socket.destroy();
  }
  await new Promise((r) => setTimeout(r, 200));
  const metrics = (await call(api.url, 'GET', '/metrics')).body as string;
  const allowlist = metrics.split('\n').filter((l) => l.startsWith('paddock_http_requests_total{method="PUT",route="/v1/allowlist"'));
  assert.ok(allowlist.length > 0, 'the aborted requests are counted');
  assert.deepEqual(allowlist.filter((l) => /status="5\d\d"/.test(l)), [], allowlist.join('\n'));
});
