import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { routeKey, routesWhere, validRequestFor, Workspace } from './fixtures.ts';

// test-plan: once (each test stops at the credential or the route)

// OWASP API5:2023 Broken Function Level Authorization. Paddock has two credentials and no admin
// functions over HTTP. The contract's table (which credential each route takes, and that the
// other is refused with wrong_credential_type) is checked route by route in
// test/api/credentials.test.ts ("every authenticated route takes the credential the contract
// says", "every authenticated route refuses a missing, a wrong-type and a garbage credential").
// Here the same sweep is run against real targets, and nothing may have happened; the operator's
// functions (limits, metrics) are out of an account's reach; and no header or method turns one
// function into another.

const token = 'operator-metrics-token-0123456789';
const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '20', PADDOCK_METRICS_TOKEN: token } });
const owner = await newAccount(stack.url, 'api5');
const w = new Workspace(stack.url, owner);

async function state() {
  const [keys, sandboxes, secrets, allowlist] = await Promise.all([
    call(stack.url, 'GET', '/v1/api-keys', { token: owner.token }),
    call(stack.url, 'GET', '/v1/sandboxes?state=all', { token: owner.key }),
    call(stack.url, 'GET', '/v1/secrets', { token: owner.key }),
    call(stack.url, 'GET', '/v1/allowlist', { token: owner.key }),
  ]);
  const notes = await call(stack.url, 'GET', `/v1/sandboxes/${await w.sandboxId()}/files?path=notes.txt`, { token: owner.key });
  return {
    keys: keys.body.data.map((k: { id: string }) => k.id),
    sandboxes: sandboxes.body.data.map((s: { id: string; state: string; status: string }) => `${s.id} ${s.state} ${s.status}`),
    secrets: secrets.body.data,
    allowlist: allowlist.body,
    notes: notes.body.content,
  };
}

test('every authenticated route, sent the other credential with a real target, answers 401 wrong_credential_type and does nothing', async () => {
  const routes = routesWhere((r) => r.spec.auth !== 'none');
  // Targets first (a key and a sandbox to destroy, a secret to delete), then the snapshot.
  const requests = await Promise.all(routes.map(async (route) => ({ route, req: await validRequestFor(route, w) })));
  const before = await state();
  for (const { route, req } of requests) {
    const other = route.spec.auth === 'apiKey' ? owner.token : owner.key;
    const res = await call(stack.url, req.method, req.path, { token: other, body: req.body, upgrade: req.upgrade });
    assertProblem(res, 401, 'wrong_credential_type');
    assert.ok(res.body.detail, routeKey(route));
  }
  assert.deepEqual(await state(), before);
});

test("the operator's functions are out of an account's reach", async () => {
  // Limits and overrides are set by the operator (environment, database), never through the API.
  for (const method of ['PUT', 'PATCH', 'POST', 'DELETE']) {
    const res = await call(stack.url, method, '/v1/account', { token: owner.key, body: method === 'DELETE' ? undefined : { concurrentSandboxesLimit: 100 } });
    assertProblem(res, 405, 'method_not_allowed');
  }
  for (const path of ['/v1/accounts', '/v1/admin', '/v1/admin/accounts', '/v1/accounts/' + owner.id, '/v1/quotas', '/v1/users', '/admin']) {
    assertProblem(await call(stack.url, 'GET', path, { token: owner.key }), 404, 'not_found');
  }
  // /metrics wants the operator's token: no account credential will do.
  for (const credential of [owner.key, owner.token, undefined]) {
    assertProblem(await call(stack.url, 'GET', '/metrics', { token: credential }), 401, 'invalid_credential');
  }
  assert.equal((await call(stack.url, 'GET', '/metrics', { token })).status, 200);
  const account = await call(stack.url, 'GET', '/v1/account', { token: owner.key });
  assert.equal(account.body.usage.concurrentSandboxes.limit, 20);
});

test('method-override headers are ignored: a GET stays a GET, a POST a POST', async () => {
  const id = await w.sandboxId();
  for (const header of ['x-http-method-override', 'x-http-method', 'x-method-override']) {
    const got = await call(stack.url, 'GET', `/v1/sandboxes/${id}`, { token: owner.key, headers: { [header]: 'DELETE' } });
    assert.equal(got.status, 200);
    assert.equal(got.body.state, 'active');
    const created = await call(stack.url, 'POST', '/v1/api-keys', { token: owner.token, body: { name: 'override' }, headers: { [header]: 'DELETE' } });
    assert.equal(created.status, 201);
  }
  assert.equal((await call(stack.url, 'GET', `/v1/sandboxes/${id}`, { token: owner.key })).body.state, 'active');
  // Neither does a _method parameter or field.
  assertProblem(await call(stack.url, 'GET', `/v1/sandboxes/${id}?_method=DELETE`, { token: owner.key }), 400, 'invalid_request');
});

test('HEAD and OPTIONS never reach a DELETE handler: nothing is deleted', async () => {
  const victim = await w.victimSandboxId();
  const key = await w.victimKeyId();
  for (const method of ['HEAD', 'OPTIONS']) {
    const s = await rawRequest(stack.url, method, `/v1/sandboxes/${victim}`, { headers: { authorization: `Bearer ${owner.key}` } });
    assert.ok(s.status < 500, `${method}: ${s.status}`);
    const k = await rawRequest(stack.url, method, `/v1/api-keys/${key}`, { headers: { authorization: `Bearer ${owner.token}` } });
    assert.ok([200, 204, 404, 405].includes(k.status), `${method}: ${k.status}`);
  }
  assert.equal((await call(stack.url, 'GET', `/v1/sandboxes/${victim}`, { token: owner.key })).body.state, 'active');
  assert.ok((await call(stack.url, 'GET', '/v1/api-keys', { token: owner.token })).body.data.some((k: { id: string }) => k.id === key));
});
