import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allRoutes } from '../../api/routes/index.ts';
import { route } from '../../api/routes/route.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { startTestApi } from '../helpers/stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { rawExchange, rawRequest } from '../helpers/raw-http.ts';
import { connect } from 'node:net';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { credentialFor, routeKey, securityHeaderProblems, validRequestFor, Workspace } from './fixtures.ts';

// test-plan: once (the API sets the headers, whatever runtime answered)

// OWASP API8:2023 Security Misconfiguration: every answer, whatever produced it (a route, the
// router's 404 and 405, the body reader's 413 and 415, the rate limiter's 429, an unexpected
// error's 500, Node's own 400 and 431 for requests it cannot parse, a streamed exec), carries the
// security headers and a request id, and nothing that says what runs behind it: no X-Powered-By,
// no Server, no cookie, no stack trace, no open CORS. (test/api/operational.test.ts checks the
// headers on a sample of answers; this sweeps every route.)

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '20' } });
const owner = await newAccount(stack.url, 'api8');
const w = new Workspace(stack.url, owner);

const boom = route(
  {
    method: 'get',
    path: '/v1/test/boom',
    operationId: 'testBoom',
    summary: 'throws',
    tag: 'test',
    auth: 'none',
    responses: { 200: { description: 'never' } },
    errors: [],
  },
  async () => {
    throw new Error('boom at /work/main/api/secret.ts:12:5 password=hunter2 select * from accounts');
  },
);
const small = await startTestApi({ overrides: { PADDOCK_RATE_AUTH_PER_MIN: '1', PADDOCK_BODY_LIMIT_BYTES: '1024' }, extraRoutes: [boom] });

function assertClean(what: string, res: JsonResponse | { status: number; headers: Headers; body: unknown }): void {
  assert.deepEqual(securityHeaderProblems(res.headers), [], `${what} (${res.status})`);
  const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
  assert.doesNotMatch(text, /\n\s+at |node_modules|\/work\/|\.ts:\d+|hunter2|Error:/, `${what}: internals in the answer`);
  if (res.status >= 400 && text) {
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, `${what}: content type`);
    assert.ok(!('stack' in (res.body as object)), `${what}: a stack`);
  }
}

test('every route: its success, and its answers without a credential, with a bad query, with the wrong method and to HEAD', async () => {
  for (const r of allRoutes) {
    const req = await validRequestFor(r, w);
    const token = credentialFor(r, owner);
    const key = routeKey(r);
    const success = await call(stack.url, req.method, req.path, { token, body: req.body, upgrade: req.upgrade });
    assertClean(`${key}`, success);
    // What the OpenAPI document declares for this answer is what is sent.
    for (const name of ['X-Request-Id', ...Object.keys(r.spec.responses[success.status]?.headers ?? {})]) {
      assert.ok(success.headers.get(name), `${key} ${success.status}: ${name} is declared but was not sent`);
    }
    if (r.spec.auth !== 'none') assertClean(`${key} no credential`, await call(stack.url, req.method, req.path, { body: req.body, upgrade: req.upgrade }));
    const sep = req.path.includes('?') ? '&' : '?';
    assertClean(`${key} bad query`, await call(stack.url, req.method, `${req.path}${sep}nope=1`, { token, body: req.body, upgrade: req.upgrade }));
    const wrong = r.spec.method === 'patch' ? 'POST' : 'PATCH';
    assertClean(`${key} ${wrong}`, await rawRequest(stack.url, wrong, req.path, { headers: token ? { authorization: `Bearer ${token}` } : {} }));
    const head = await rawRequest(stack.url, 'HEAD', req.path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    assert.deepEqual(securityHeaderProblems(head.headers), [], `${key} HEAD (${head.status})`);
  }
});

test('the router, the body reader, the rate limiter and the operational endpoints', async () => {
  const answers: [string, JsonResponse][] = [
    ['404', await call(stack.url, 'GET', '/nope')],
    ['404 deep', await call(stack.url, 'GET', '/v1/sandboxes/x/y/z/w')],
    ['405', await call(stack.url, 'DELETE', '/v1/account', { token: owner.key })],
    ['413', await call(small.url, 'POST', '/v1/auth/login', { body: { email: 'a@b.test', password: 'x'.repeat(2000) } })],
    ['415', await call(stack.url, 'POST', '/v1/auth/login', { body: 'email=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })],
    ['400 json', await call(stack.url, 'POST', '/v1/auth/login', { body: '{' })],
    ['healthz', await call(stack.url, 'GET', '/healthz')],
    ['readyz', await call(stack.url, 'GET', '/readyz')],
    ['openapi', await call(stack.url, 'GET', '/v1/openapi.json')],
    ['metrics', await call(stack.url, 'GET', '/metrics')],
  ];
  await call(small.url, 'POST', '/v1/auth/login', { body: { email: 'a@b.test', password: 'x' } });
  answers.push(['429', await call(small.url, 'POST', '/v1/auth/login', { body: { email: 'a@b.test', password: 'x' } })]);
  for (const [what, res] of answers) assertClean(what, res);
  assert.equal(answers.find(([w]) => w === '429')![1].status, 429);
});

test('an unexpected error answers 500 internal_error with a generic detail, and nothing of the error', async () => {
  const res = await call(small.url, 'GET', '/v1/test/boom');
  assertProblem(res, 500, 'internal_error');
  assert.equal(res.body.detail, 'An unexpected error occurred; quote the request id when reporting it.');
  assertClean('500', res);
  assert.doesNotMatch(JSON.stringify(res.body), /boom|secret|select/);
});

test("requests Node cannot parse still get a problem document and the security headers (and HEAD gets no body)", async () => {
  const cases: [string, string | Buffer, number][] = [
    ['malformed request line', 'GET /v1/account HTTP/1.1 extra\r\nHost: x\r\n\r\n', 400],
    ['header without a colon', 'GET /v1/account HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n', 400],
    ['Content-Length and chunked together', 'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['headers over the limit', `GET /v1/account HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ];
  for (const [what, bytes, status] of cases) {
    const [res] = await rawExchange(stack.url, bytes);
    assert.ok(res, what);
    assert.equal(res.status, status, what);
    assertClean(what, res);
  }
  // The answer to a HEAD has no body: a client would read what follows as the next answer.
  const url = new URL(stack.url);
  const received = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
    socket.write(`HEAD /v1/account HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
  });
  assert.match(received, /^HTTP\/1\.1 431 /);
  assert.match(received, /\r\nX-Content-Type-Options: nosniff\r\n/i);
  assert.equal(received.slice(received.indexOf('\r\n\r\n') + 4), '', 'no body after the head');
});

test('a streamed exec carries the security headers too', async () => {
  const id = await w.sandboxId();
  const res = await fetch(`${stack.url}/v1/sandboxes/${id}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify({ command: ['echo', 'hi'] }),
  });
  assert.equal(res.status, 200);
  await res.text();
  assert.deepEqual(securityHeaderProblems(res.headers), []);
});

test('CORS is not open: no Access-Control-Allow-* for any origin, preflight or not', async () => {
  for (const origin of ['https://evil.example', 'null', stack.url]) {
    const preflight = await rawRequest(stack.url, 'OPTIONS', '/v1/account', {
      headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    });
    const actual = await call(stack.url, 'GET', '/v1/account', { token: owner.key, headers: { origin } });
    for (const res of [preflight, actual]) {
      for (const name of ['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-allow-headers', 'access-control-allow-methods']) {
        assert.equal(res.headers.get(name), null, `${origin}: ${name}`);
      }
    }
  }
});

test('TRACE and other unusual methods are not echoed', async () => {
  // (CONNECT is Node's: without a 'connect' listener the connection is simply closed.)
  for (const method of ['TRACE', 'TRACK', 'PROPFIND']) {
    const res = await rawRequest(stack.url, method, '/v1/account', { headers: { authorization: `Bearer ${owner.key}`, 'x-echo': 'secret-header-value' } });
    assert.ok(res.status >= 400 && res.status < 500, `${method}: ${res.status}`);
    assert.doesNotMatch(JSON.stringify(res.body), /secret-header-value|pdk_live_/);
  }
});
