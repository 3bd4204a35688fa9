import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { allRoutes } from '../../api/routes/index.ts';
import { routeErrors } from '../../api/routes/chain.ts';
import { SCOPES, type Scope } from '../../shared/scopes.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { craftJwt } from '../helpers/auth-suite.ts';

// API key scopes (docs/api.md, "API key scopes"): a key made for an agent cannot lift
// the allowlist or change the secrets meant to restrict it. Driven by the route list, so a route
// added without a scope, or a scope not enforced, fails here.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });
const apiKeyRoutes = allRoutes.filter((r) => r.spec.auth === 'apiKey');

async function keyWith(account: TestAccount, scopes: Scope[] | undefined, name = 'scoped') {
  const res = await call(stack.url, 'POST', '/v1/api-keys', { token: account.token, body: scopes ? { name, scopes } : { name } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; key: string; scopes: Scope[] };
}

const concrete = (path: string) => path.replace(':id', 'sbx_00000000000000000000000000').replace(':name', 'SOME_NAME');

test('every API-key route names a scope, from the closed list', () => {
  assert.ok(apiKeyRoutes.length >= 19);
  for (const { spec } of apiKeyRoutes) {
    assert.ok(spec.scope && (SCOPES as readonly string[]).includes(spec.scope), `${spec.method} ${spec.path} has no scope`);
    assert.ok(routeErrors(spec).includes('insufficient_scope'), `${spec.method} ${spec.path} does not declare insufficient_scope`);
  }
});

test('a key without a route’s scope answers 403 insufficient_scope naming it; with it, the scope check lets it through', async () => {
  const account = await newAccount(stack.url, 'scopes');
  const lacking = new Map<Scope, string>();
  const only = new Map<Scope, string>();
  for (const scope of SCOPES) {
    lacking.set(scope, (await keyWith(account, SCOPES.filter((s) => s !== scope))).key);
    only.set(scope, (await keyWith(account, [scope])).key);
  }
  for (const { spec } of apiKeyRoutes) {
    const what = `${spec.method.toUpperCase()} ${spec.path}`;
    const refused = await call(stack.url, spec.method.toUpperCase(), concrete(spec.path), { token: lacking.get(spec.scope!)! });
    assertProblem(refused, 403, 'insufficient_scope');
    assert.equal(refused.body.scope, spec.scope, what);
    assert.match(refused.body.detail, new RegExp(spec.scope!.replace(':', '\\:')), what);
    const allowed = await call(stack.url, spec.method.toUpperCase(), concrete(spec.path), { token: only.get(spec.scope!)! });
    assert.notEqual(allowed.body?.code, 'insufficient_scope', what);
  }
});

test('scopes are listed with each key; a key made without a list has them all; unknown scopes are refused', async () => {
  const account = await newAccount(stack.url, 'scopelist');
  const full = await keyWith(account, undefined, 'full');
  assert.deepEqual(full.scopes, [...SCOPES]);
  const agent = await keyWith(account, ['exec', 'sandboxes:read', 'exec'], 'agent');
  assert.deepEqual(agent.scopes, ['sandboxes:read', 'exec']);
  const listed = await call(stack.url, 'GET', '/v1/api-keys', { token: account.token });
  const byName = Object.fromEntries((listed.body.data as { name: string; scopes: string[] }[]).map((k) => [k.name, k.scopes]));
  assert.deepEqual(byName.agent, ['sandboxes:read', 'exec']);
  assert.deepEqual(byName.full, [...SCOPES]);
  // The account's first key, from before any scope was asked for, has them all too.
  assert.deepEqual(byName.test, [...SCOPES]);
  for (const scopes of [['admin'], [], ['exec', 'root']]) {
    assertProblem(await call(stack.url, 'POST', '/v1/api-keys', { token: account.token, body: { scopes } }), 400, 'invalid_request');
  }
});

test("an agent's key cannot lift the allowlist or change secrets, and runs only what the allowlist allows", async () => {
  const owner = await newAccount(stack.url, 'agentowner');
  const agent = (await keyWith(owner, ['sandboxes:read', 'sandboxes:write', 'exec', 'files:read', 'files:write'], 'agent')).key;
  assert.equal((await call(stack.url, 'PUT', '/v1/allowlist', { token: owner.key, body: { commands: ['echo'] } })).status, 200);
  assert.equal((await call(stack.url, 'POST', '/v1/secrets', { token: owner.key, body: { name: 'TOKEN', value: 'owner-secret-value' } })).status, 201);
  const sandbox = await createSandbox(stack.url, agent);
  assert.equal(sandbox.status, 201, JSON.stringify(sandbox.body));

  assertProblem(await call(stack.url, 'DELETE', '/v1/allowlist', { token: agent }), 403, 'insufficient_scope');
  assertProblem(await call(stack.url, 'PUT', '/v1/allowlist', { token: agent, body: { commands: [] } }), 403, 'insufficient_scope');
  assertProblem(await call(stack.url, 'POST', '/v1/secrets', { token: agent, body: { name: 'TOKEN', value: 'planted-value' } }), 403, 'insufficient_scope');
  assertProblem(await call(stack.url, 'DELETE', '/v1/secrets/TOKEN', { token: agent }), 403, 'insufficient_scope');
  assert.deepEqual((await call(stack.url, 'GET', '/v1/allowlist', { token: agent })).body.commands, ['echo']);

  const exec = (command: unknown) => call(stack.url, 'POST', `/v1/sandboxes/${sandbox.body.id}/exec`, { token: agent, body: { command } });
  assert.equal((await exec(['echo', 'allowed'])).body.stdout, 'allowed\n');
  assertProblem(await exec(['sh', '-c', 'env']), 403, 'command_not_allowed');
  // The secret is injected, and masked, all the same.
  assert.equal((await exec('echo $TOKEN')).body.stdout, '***\n');
});

test('a policy change applies to commands started after it; one already running finishes as it started', async () => {
  const owner = await newAccount(stack.url, 'policy');
  const sandbox = await createSandbox(stack.url, owner.key);
  const exec = (command: string) =>
    call(stack.url, 'POST', `/v1/sandboxes/${sandbox.body.id}/exec`, { token: owner.key, body: { command, timeoutSeconds: 20 } });
  const running = exec('sleep 1.5; echo finished');
  await sleep(500);
  assert.equal((await call(stack.url, 'PUT', '/v1/allowlist', { token: owner.key, body: { commands: ['ls'] } })).status, 200);
  assertProblem(await exec('cat /etc/hostname'), 403, 'command_not_allowed');
  const before = await running;
  assert.equal(before.body.stdout, 'finished\n');
  assert.equal(before.body.exitCode, 0);
});

test('a dashboard token signed with the real secret but without an expiry is refused', async () => {
  const account = await newAccount(stack.url, 'noexp');
  const forever = craftJwt(stack.apis[0]!, account.id, { claims: { exp: undefined } });
  assertProblem(await call(stack.url, 'GET', '/v1/api-keys', { token: forever }), 401, 'invalid_credential');
  const fine = craftJwt(stack.apis[0]!, account.id);
  assert.equal((await call(stack.url, 'GET', '/v1/api-keys', { token: fine })).status, 200);
});
