import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDeployment } from '../helpers/deployment.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

// Two API instances on one PostgreSQL and Redis, as two replicas would be (in-process, or real
// processes with PADDOCK_TEST_DEPLOYMENT=replicas).
const stack = await startDeployment({ apis: 2, overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '2' } });
const [apiA, apiB] = stack.apiUrls as [string, string];

async function activeIds(url: string, key: string): Promise<string[]> {
  return (await call(url, 'GET', '/v1/sandboxes', { token: key })).body.data.map((s: any) => s.id);
}

test('20 parallel creates through two API instances give exactly the concurrent cap', async () => {
  const a = await newAccount(apiA);
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => createSandbox(i % 2 ? apiB : apiA, a.key, '?wait=false')),
  );
  const created = results.filter((r) => r.status === 201);
  const refused = results.filter((r) => r.status === 429);
  assert.equal(created.length, 2, JSON.stringify(results.map((r) => r.status)));
  assert.equal(refused.length, 18);
  for (const r of refused) assertProblem(r, 429, 'concurrent_sandbox_limit_reached');
  assert.deepEqual((await activeIds(apiA, a.key)).sort(), created.map((r) => r.body.id).sort());
});

test('a refused create creates nothing and bills nothing', async () => {
  const a = await newAccount(apiA);
  await createSandbox(apiA, a.key);
  await createSandbox(apiA, a.key);
  const heldBefore = (await stack.runtime.list()).length;
  const refused = await createSandbox(apiA, a.key);
  assertProblem(refused, 429, 'concurrent_sandbox_limit_reached');
  assert.equal(refused.body.limit, 2);
  const all = await call(apiA, 'GET', '/v1/sandboxes?state=all', { token: a.key });
  assert.equal(all.body.data.length, 2);
  assert.equal((await stack.runtime.list()).length, heldBefore);
  const account = await call(apiA, 'GET', '/v1/account', { token: a.key });
  assert.equal(account.body.usage.concurrentSandboxes.active, 2);
});

test('destroying a sandbox frees its place under the concurrent cap', async () => {
  const a = await newAccount(apiA);
  const first = await createSandbox(apiA, a.key);
  await createSandbox(apiA, a.key);
  assertProblem(await createSandbox(apiA, a.key), 429, 'concurrent_sandbox_limit_reached');
  await call(apiA, 'DELETE', `/v1/sandboxes/${first.body.id}`, { token: a.key });
  assert.equal((await createSandbox(apiB, a.key)).status, 201);
});

test('a per-account override of the concurrent cap is honoured', async () => {
  const a = await newAccount(apiA);
  await stack.sql('update accounts set concurrent_sandboxes_limit = 1 where id = $1', [a.id]);
  assert.equal((await createSandbox(apiA, a.key)).status, 201);
  const refused = await createSandbox(apiA, a.key);
  assertProblem(refused, 429, 'concurrent_sandbox_limit_reached');
  const account = await call(apiA, 'GET', '/v1/account', { token: a.key });
  assert.deepEqual(account.body.usage.concurrentSandboxes, { active: 1, limit: 1 });
});

test('the monthly cap refuses once used up, and the concurrent cap is checked first', async () => {
  const a = await newAccount(apiA);
  // 0.0003 h is about one second of sandbox time.
  await stack.sql('update accounts set monthly_sandbox_hours_limit = 0.0003 where id = $1', [a.id]);
  const s = await createSandbox(apiA, a.key);
  assert.equal(s.status, 201);
  await sleep(1500);
  const second = await createSandbox(apiA, a.key);
  assertProblem(second, 429, 'monthly_usage_limit_reached');
  assert.ok(second.body.used >= 0.0003, JSON.stringify(second.body));

  // Fill the concurrent cap with the override, then both caps are exhausted: concurrent answers.
  await stack.sql('update accounts set concurrent_sandboxes_limit = 1 where id = $1', [a.id]);
  assertProblem(await createSandbox(apiB, a.key), 429, 'concurrent_sandbox_limit_reached');

  await call(apiA, 'DELETE', `/v1/sandboxes/${s.body.id}`, { token: a.key });
  assertProblem(await createSandbox(apiB, a.key), 429, 'monthly_usage_limit_reached');
  assert.deepEqual(await activeIds(apiA, a.key), []);
});

test('GET /v1/account reports sandbox-hours used from running time and active sandboxes', async () => {
  const a = await newAccount(apiA);
  const before = await call(apiA, 'GET', '/v1/account', { token: a.key });
  assert.equal(before.body.usage.sandboxHours.used, 0);
  const s = await createSandbox(apiA, a.key);
  await sleep(1000);
  const during = await call(apiA, 'GET', '/v1/account', { token: a.key });
  assert.equal(during.body.usage.concurrentSandboxes.active, 1);
  assert.ok(during.body.usage.sandboxHours.used >= 0.0002, JSON.stringify(during.body.usage));
  await call(apiA, 'DELETE', `/v1/sandboxes/${s.body.id}`, { token: a.key });
  const after1 = await call(apiA, 'GET', '/v1/account', { token: a.key });
  await sleep(600);
  const after2 = await call(apiA, 'GET', '/v1/account', { token: a.key });
  assert.equal(after2.body.usage.concurrentSandboxes.active, 0);
  // Destroyed: the figure stops growing.
  assert.equal(after2.body.usage.sandboxHours.used, after1.body.usage.sandboxHours.used);
  assert.ok(after2.body.usage.sandboxHours.used < 0.01);
});

test('Idempotency-Key: a retry answers the first sandbox, another body 422, a concurrent duplicate 409', async () => {
  const a = await newAccount(apiA);
  const headers = { 'idempotency-key': `k-${Date.now()}` };
  const first = await call(apiA, 'POST', '/v1/sandboxes', { token: a.key, body: { metadata: { n: '1' } }, headers });
  assert.equal(first.status, 201);
  const retry = await call(apiB, 'POST', '/v1/sandboxes', { token: a.key, body: { metadata: { n: '1' } }, headers });
  assert.equal(retry.status, 201);
  assert.equal(retry.body.id, first.body.id);
  assertProblem(
    await call(apiA, 'POST', '/v1/sandboxes', { token: a.key, body: { metadata: { n: '2' } }, headers }),
    422,
    'idempotency_key_reused',
  );
  assert.equal((await call(apiA, 'GET', '/v1/sandboxes?state=all', { token: a.key })).body.data.length, 1);

  const racing = { 'idempotency-key': `race-${Date.now()}` };
  const [x, y] = await Promise.all([
    call(apiA, 'POST', '/v1/sandboxes', { token: a.key, body: {}, headers: racing }),
    sleep(5).then(() => call(apiB, 'POST', '/v1/sandboxes', { token: a.key, body: {}, headers: racing })),
  ]);
  const statuses = [x.status, y.status].sort();
  assert.deepEqual(statuses, [201, 409], JSON.stringify([x.body, y.body]));
  assertProblem([x, y].find((r) => r.status === 409)!, 409, 'idempotency_conflict');
  assert.equal((await call(apiA, 'GET', '/v1/sandboxes?state=all', { token: a.key })).body.data.length, 2);
});
