import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { shapeOf, ShapedRouter } from '../../api/routes/shaped-router.ts';

// Requests go to a router holding only the routes of their path's shape (api/routes/shaped-router.ts);
// what matches, and what a near miss answers, must be what one router of every route answered.

test("a path's shape: its segments and its first two, in lower case, without one trailing slash", () => {
  assert.equal(shapeOf('/v1/sandboxes/:id'), '3 /v1/sandboxes');
  assert.equal(shapeOf('/V1/Sandboxes/sbx_x/'), '3 /v1/sandboxes');
  assert.equal(shapeOf('/v1/sandboxes/:id/files/ls'), '5 /v1/sandboxes');
  assert.equal(shapeOf('/v1/account'), '2 /v1/account');
  assert.equal(shapeOf('/healthz'), '1 /healthz');
  assert.equal(shapeOf('/'), '1 /');
  assert.throws(() => new ShapedRouter().add('get', '/v1/:kind/x', () => undefined), /must be literal/);
});

const api = await startTestApi();
const account = await newAccount(api.url);

test('a route matches as before: case-insensitive, one trailing slash allowed, parameters read', async () => {
  for (const path of ['/v1/account', '/V1/ACCOUNT', '/v1/account/']) {
    const res = await call(api.url, 'GET', path, { token: account.key });
    assert.equal(res.status, 200, path);
    assert.equal(res.body.id, account.id, path);
  }
  const missing = await call(api.url, 'GET', '/v1/sandboxes/sbx_000000000000000000000000', { token: account.key });
  assertProblem(missing, 404, 'sandbox_not_found');
});

test('a wrong method answers 405 naming the methods of that path only; an unknown path 404', async () => {
  const exec = await call(api.url, 'DELETE', '/v1/sandboxes/sbx_000000000000000000000000/exec', { token: account.key });
  assertProblem(exec, 405, 'method_not_allowed');
  assert.deepEqual((exec.headers.get('allow') ?? '').split(/,\s*/).sort(), ['POST']);
  const sandbox = await call(api.url, 'PUT', '/v1/sandboxes/sbx_000000000000000000000000', { token: account.key, body: {} });
  assertProblem(sandbox, 405, 'method_not_allowed');
  assert.deepEqual((sandbox.headers.get('allow') ?? '').split(/,\s*/).sort(), ['DELETE', 'GET', 'HEAD']);
  for (const path of ['/v1/sandboxes/sbx_000000000000000000000000/nope', '/v1/nope', '/v1//account', '/nope/v1/account', '/v2/account']) {
    assertProblem(await call(api.url, 'GET', path, { token: account.key }), 404, 'not_found');
  }
});

test('OPTIONS answers the methods of a path; a method no route can have answers 405 there, 404 elsewhere', async () => {
  const options = await call(api.url, 'OPTIONS', '/v1/sandboxes/sbx_000000000000000000000000', { token: account.key });
  assert.equal(options.status, 200);
  assert.deepEqual((options.headers.get('allow') ?? '').split(/,\s*/).sort(), ['DELETE', 'GET', 'HEAD']);
  const head = await call(api.url, 'HEAD', '/v1/account', { token: account.key });
  assert.equal(head.status, 200);
  assertProblem(await call(api.url, 'PROPFIND', '/v1/account', { token: account.key }), 405, 'method_not_allowed');
  assertProblem(await call(api.url, 'OPTIONS', '/v1/nope', { token: account.key }), 404, 'not_found');
});

test("a path's parameters are URI-decoded, and one that does not decode is taken as sent", async () => {
  const decoded = await call(api.url, 'DELETE', '/v1/secrets/ROUTING_%41B', { token: account.key });
  assertProblem(decoded, 404, 'secret_not_found');
  assert.match(String(decoded.body.detail), /No secret ROUTING_AB\./);
  const raw = await call(api.url, 'DELETE', '/v1/secrets/ROUTING_%E0%A4%A', { token: account.key });
  assertProblem(raw, 404, 'secret_not_found');
  assert.match(String(raw.body.detail), /No secret ROUTING_%E0%A4%A\./);
});
