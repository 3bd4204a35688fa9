import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allRoutes } from '../../api/routes/index.ts';
import { errorCodes } from '../../shared/errors.ts';
import { startTestApi } from '../helpers/stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { uniqueEmail } from '../helpers/config.ts';
import { eventually } from '../helpers/eventually.ts';

const api = await startTestApi();

const SECURITY_HEADERS: Record<string, string | RegExp> = {
  'cache-control': 'no-store',
  'content-security-policy': /default-src 'none'/,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': /max-age=\d+/,
  'cross-origin-resource-policy': 'same-origin',
};

function assertSecurityHeaders(res: JsonResponse, what: string): void {
  for (const [name, expected] of Object.entries(SECURITY_HEADERS)) {
    const value = res.headers.get(name);
    assert.ok(value !== null, `${what}: no ${name}`);
    if (typeof expected === 'string') assert.equal(value, expected, `${what}: ${name}`);
    else assert.match(value, expected, `${what}: ${name}`);
  }
}

test('GET /healthz answers 200 {status: ok} without credentials', async () => {
  const res = await call(api.url, 'GET', '/healthz');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { status: 'ok' });
  assertSecurityHeaders(res, '/healthz');
});

test('GET /readyz answers 200 when PostgreSQL and Redis answer', async () => {
  const res = await call(api.url, 'GET', '/readyz');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { status: 'ready', checks: { postgres: true, redis: true } });
});

test('without Redis: /readyz answers 503, /healthz still 200, requests answer 503 service_unavailable with Retry-After', async () => {
  const broken = await startTestApi();
  const account = await newAccount(broken.url, 'noredis');
  broken.deps.redis.disconnect();
  const ready = await call(broken.url, 'GET', '/readyz');
  assert.equal(ready.status, 503);
  assert.deepEqual(ready.body, { status: 'unavailable', checks: { postgres: true, redis: false } });
  assert.equal((await call(broken.url, 'GET', '/healthz')).status, 200, 'liveness does not depend on Redis');
  for (const res of [
    await call(broken.url, 'GET', '/v1/account', { token: account.key }),
    await call(broken.url, 'POST', '/v1/auth/login', { body: { email: account.email, password: account.password } }),
  ]) {
    assertProblem(res, 503, 'service_unavailable');
    assert.match(res.headers.get('retry-after') ?? '', /^\d+$/);
  }
});

test('without its queue\'s own Redis connection (not yet back after an outage), a web is not ready: creates and destroys would answer 503', async () => {
  const lagging = await startTestApi();
  assert.equal((await call(lagging.url, 'GET', '/readyz')).status, 200);
  (await lagging.deps.queue.backend.client).disconnect();
  // The connection is closed once its socket is: a moment after the call.
  const ready = await eventually('the web says it is not ready', 5000, async () => {
    const res = await call(lagging.url, 'GET', '/readyz');
    return res.status === 503 ? res : undefined;
  });
  assert.deepEqual(ready.body, { status: 'unavailable', checks: { postgres: true, redis: false } });
  assert.equal((await call(lagging.url, 'GET', '/healthz')).status, 200);
});

test('without PostgreSQL: /readyz answers 503 naming it, and requests answer 503 service_unavailable', async () => {
  // Nothing listens on port 1: every query fails to connect.
  const broken = await startTestApi({ overrides: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/paddock' } });
  const ready = await call(broken.url, 'GET', '/readyz');
  assert.equal(ready.status, 503);
  assert.deepEqual(ready.body, { status: 'unavailable', checks: { postgres: false, redis: true } });
  const res = await call(broken.url, 'POST', '/v1/auth/login', { body: { email: uniqueEmail('nopg'), password: 'whatever 123' } });
  assertProblem(res, 503, 'service_unavailable');
  assert.match(res.headers.get('retry-after') ?? '', /^\d+$/);
});

test('GET /v1/openapi.json is an OpenAPI 3.1 document listing every route with its method', async () => {
  const res = await call(api.url, 'GET', '/v1/openapi.json');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const doc = res.body as {
    openapi: string;
    info: { title: string; version: string };
    paths: Record<string, Record<string, { security: unknown[]; responses: Record<string, unknown>; 'x-rate-limit-bucket'?: string }>>;
  };
  assert.match(doc.openapi, /^3\.1\.\d+$/);
  assert.equal(typeof doc.info.title, 'string');
  const documented = Object.entries(doc.paths)
    .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
  const served = allRoutes.map((r) => `${r.spec.method.toUpperCase()} ${r.spec.path.replace(/:(\w+)/g, '{$1}')}`).sort();
  assert.deepEqual(documented, served);
  for (const { spec } of allRoutes) {
    const op = doc.paths[spec.path.replace(/:(\w+)/g, '{$1}')]![spec.method]!;
    assert.equal(op.security.length === 0, spec.auth === 'none', `${spec.method} ${spec.path}: security`);
    assert.equal(op['x-rate-limit-bucket'], spec.bucket, `${spec.method} ${spec.path}: bucket`);
    for (const status of Object.keys(spec.responses)) assert.ok(op.responses[status], `${spec.method} ${spec.path}: ${status}`);
    if (spec.bucket) assert.ok(op.responses['429'], `${spec.method} ${spec.path}: 429`);
    if (spec.auth !== 'none') assert.ok(op.responses['401'], `${spec.method} ${spec.path}: 401`);
  }
  for (const path of ['/v1/auth/signup', '/v1/auth/login', '/v1/api-keys', '/v1/api-keys/{keyId}', '/v1/account']) {
    assert.ok(doc.paths[path], `${path} is documented`);
  }
});

test("the OpenAPI document's error code enum is exactly the catalogue of shared/errors.ts", async () => {
  const res = await call(api.url, 'GET', '/v1/openapi.json');
  const problem = res.body.components.schemas.Problem;
  assert.deepEqual([...problem.properties.code.enum].sort(), [...errorCodes].sort());
  assert.deepEqual([...problem.required].sort(), ['code', 'detail', 'requestId', 'status', 'title', 'type']);
});

test('/v1/openapi.json answers 405 method_not_allowed to POST', async () => {
  const res = await call(api.url, 'POST', '/v1/openapi.json', { body: {} });
  assertProblem(res, 405, 'method_not_allowed');
  assert.match(res.headers.get('allow') ?? '', /\bGET\b/);
});

test('GET /metrics answers Prometheus text with request counts and, after a 429, the refusals', async () => {
  const limited = await startTestApi({ overrides: { PADDOCK_RATE_AUTH_PER_MIN: '1' } });
  const body = { email: uniqueEmail('metrics'), password: 'wrong password' };
  assertProblem(await call(limited.url, 'POST', '/v1/auth/login', { body }), 401, 'invalid_login');
  assertProblem(await call(limited.url, 'POST', '/v1/auth/login', { body }), 429, 'rate_limited');
  assertProblem(await call(limited.url, 'POST', '/v1/auth/login', { body }), 429, 'rate_limited');
  const res = await call(limited.url, 'GET', '/metrics');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  const text = res.body as string;
  assert.match(text, /^# TYPE paddock_http_requests_total counter$/m);
  assert.match(text, /^paddock_http_requests_total\{method="POST",route="\/v1\/auth\/login",status="401"\} 1$/m);
  assert.match(text, /^paddock_http_requests_total\{method="POST",route="\/v1\/auth\/login",status="429"\} 2$/m);
  assert.match(text, /^# TYPE paddock_rate_limit_refusals_total counter$/m);
  assert.match(text, /^paddock_rate_limit_refusals_total\{bucket="auth"\} 2$/m);
  assert.match(text, /^paddock_http_request_duration_seconds_bucket\{/m);
  // Work on the event loop that others wait behind shows as lag (docs/deploy.md alerts on its p99).
  assert.match(text, /^paddock_api_nodejs_eventloop_lag_p99_seconds \d/m);
  assert.match(text, /^paddock_api_nodejs_eventloop_lag_max_seconds \d/m);
  // Metric labels never carry ids or query strings: the route is the pattern.
  assert.equal(/acct_|key_[0-9a-z]{24}/.test(text), false);
});

test('with PADDOCK_METRICS_TOKEN set, /metrics wants exactly that bearer token', async () => {
  const token = 'metrics-token-0123456789';
  const guarded = await startTestApi({ overrides: { PADDOCK_METRICS_TOKEN: token } });
  assertProblem(await call(guarded.url, 'GET', '/metrics'), 401, 'invalid_credential');
  assertProblem(await call(guarded.url, 'GET', '/metrics', { token: `${token}x` }), 401, 'invalid_credential');
  assertProblem(await call(guarded.url, 'GET', '/metrics', { token: token.slice(0, -1) }), 401, 'invalid_credential');
  const ok = await call(guarded.url, 'GET', '/metrics', { token });
  assert.equal(ok.status, 200);
  assert.match(ok.body, /paddock_http_requests_total/);
});

test('an unknown route answers 404 not_found as a problem document', async () => {
  for (const [method, path] of [
    ['GET', '/'],
    ['GET', '/v1'],
    ['GET', '/v1/nope'],
    ['POST', '/v1/auth'],
    ['GET', '/v2/account'],
    ['DELETE', '/v1/api-keys/a/b'],
    ['GET', '/v1/account/%00'],
    ['GET', '/.env'],
  ] as const) {
    const res = await call(api.url, method, path);
    assertProblem(res, 404, 'not_found');
    assertSecurityHeaders(res, `${method} ${path}`);
  }
});

test('a known route with the wrong method answers 405 method_not_allowed with an Allow header', async () => {
  const cases: [string, string, string[]][] = [
    ['DELETE', '/healthz', ['GET', 'HEAD']],
    ['POST', '/readyz', ['GET', 'HEAD']],
    ['PUT', '/metrics', ['GET', 'HEAD']],
    ['GET', '/v1/auth/signup', ['POST']],
    ['PUT', '/v1/auth/login', ['POST']],
    ['PATCH', '/v1/api-keys', ['GET', 'HEAD', 'POST']],
    ['POST', '/v1/api-keys/key_x', ['DELETE']],
    ['DELETE', '/v1/account', ['GET', 'HEAD']],
    ['PROPFIND', '/v1/account', ['GET', 'HEAD']],
  ];
  for (const [method, path, allowed] of cases) {
    const res = await call(api.url, method, path);
    assertProblem(res, 405, 'method_not_allowed');
    const allow = (res.headers.get('allow') ?? '').split(/,\s*/).sort();
    assert.deepEqual(allow, allowed.sort(), `${method} ${path}`);
    assertSecurityHeaders(res, `${method} ${path}`);
  }
});

test('X-Request-Id: a well-formed one is echoed, in the header and the problem document', async () => {
  for (const id of ['abc', 'req-123_ABC.def:9', 'x'.repeat(128), '0f8fad5b-d9cb-469f-a165-70867728950e']) {
    const ok = await call(api.url, 'GET', '/healthz', { headers: { 'x-request-id': id } });
    assert.equal(ok.headers.get('x-request-id'), id);
    const problem = await call(api.url, 'GET', '/v1/nope', { headers: { 'x-request-id': id } });
    assertProblem(problem, 404, 'not_found');
    assert.equal(problem.body.requestId, id);
  }
});

test('X-Request-Id: a missing or malformed one is replaced by a fresh id', async () => {
  const seen = new Set<string>();
  for (const id of [undefined, '', 'has space', 'x'.repeat(129), 'semi;colon', '<script>', 'a/b', 'ünï']) {
    const headers: Record<string, string> = id === undefined ? {} : { 'x-request-id': id };
    const res = await call(api.url, 'GET', '/v1/account', { headers });
    assertProblem(res, 401, 'missing_credential');
    const got = res.headers.get('x-request-id') ?? '';
    assert.match(got, /^req_[0-9a-f]{24}$/, `for ${JSON.stringify(id)}`);
    assert.notEqual(got, id);
    seen.add(got);
  }
  assert.equal(seen.size, 8, 'every generated id is new');
});

test('every kind of answer carries X-Request-Id and the security headers', async () => {
  const account = await newAccount(api.url, 'headers');
  const answers: [string, JsonResponse][] = [
    ['200 account', await call(api.url, 'GET', '/v1/account', { token: account.key })],
    ['201 key', await call(api.url, 'POST', '/v1/api-keys', { token: account.token, body: {} })],
    ['204 revoke', await call(api.url, 'DELETE', `/v1/api-keys/${account.keyId}`, { token: account.token })],
    ['400', await call(api.url, 'POST', '/v1/auth/login', { body: {} })],
    ['401', await call(api.url, 'GET', '/v1/account')],
    ['404', await call(api.url, 'GET', '/nope')],
    ['405', await call(api.url, 'PUT', '/v1/account')],
    ['415', await call(api.url, 'POST', '/v1/auth/login', { body: 'x', headers: { 'content-type': 'text/plain' } })],
    ['readyz', await call(api.url, 'GET', '/readyz')],
    ['openapi', await call(api.url, 'GET', '/v1/openapi.json')],
    ['metrics', await call(api.url, 'GET', '/metrics')],
  ];
  for (const [what, res] of answers) {
    assert.ok(res.status < 500, `${what}: ${res.status}`);
    assert.match(res.headers.get('x-request-id') ?? '', /^req_[0-9a-f]{24}$/, what);
    assertSecurityHeaders(res, what);
  }
});
