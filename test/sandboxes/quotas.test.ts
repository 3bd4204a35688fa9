import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDeployment } from '../helpers/deployment.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { newId } from '../../shared/ids.ts';

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
  // Every answer's status and code, so a failure says what the others answered.
  const answers = JSON.stringify(results.map((r) => `${r.status} ${r.body?.code ?? r.body?.status ?? ''}`));
  assert.equal(created.length, 2, answers);
  assert.equal(refused.length, 18, answers);
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

test('usage counts each sandbox by the billing rule, per month: one spanning the month boundary counts only its part', async () => {
  const a = await newAccount(apiA);
  const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));
  const minutes = (n: number) => n * 60_000;
  // Rows only, each as a runtime sandbox that is gone (destroy finds nothing to kill): one from the
  // previous month, one across the boundary, one this month, one that never became ready.
  const rows = [
    { ready: new Date(monthStart.getTime() - minutes(50)), expires: new Date(monthStart.getTime() - minutes(20)) },
    { ready: new Date(monthStart.getTime() - minutes(10)), expires: new Date(Date.now() + minutes(30)) },
    { ready: new Date(Date.now() - minutes(5)), expires: new Date(Date.now() + minutes(25)) },
    { ready: null, expires: new Date(Date.now() + minutes(25)) },
  ].map((r) => ({ ...r, id: newId('sbx') }));
  for (const r of rows) {
    await stack.sql(
      `insert into sandboxes (id, account_id, state, status, image, created_at, ready_at, expires_at)
       values ($1, $2, 'active', 'running', 'test', coalesce($3::timestamptz, now()) - interval '1 second', $3, $4)`,
      [r.id, a.id, r.ready, r.expires],
    );
  }
  // The first was destroyed last month (as if the reaper had); the others through the API now.
  await stack.sql(
    `update sandboxes set state = 'destroyed', status = 'terminated', destroy_reason = 'expired', destroyed_at = $2 where id = $1`,
    [rows[0]!.id, rows[0]!.expires],
  );
  const usedHours = async () => (await call(apiB, 'GET', '/v1/account', { token: a.key })).body.usage.sandboxHours.used as number;
  // The rule computed independently over every row of the account, at one instant.
  const byRule = async () =>
    Number(
      ((await stack.sql(
        `select coalesce(sum(extract(epoch from (coalesce(destroyed_at, now()) - greatest(ready_at, $2::timestamptz)))), 0) / 3600 as h
           from sandboxes where account_id = $1 and ready_at is not null and coalesce(destroyed_at, now()) > $2::timestamptz`,
        [a.id, monthStart],
      )) as { h: string }[])[0]!.h,
    );
  const close = (x: number, y: number) => Math.abs(x - y) < 0.0005;
  const [before, ruleBefore] = [await usedHours(), await byRule()];
  assert.ok(close(before, ruleBefore), `${before} h reported while running, ${ruleBefore} h by the rule`);
  for (const r of rows.slice(1)) assert.equal((await call(apiA, 'DELETE', `/v1/sandboxes/${r.id}`, { token: a.key })).status, 200);
  const [after, ruleAfter] = [await usedHours(), await byRule()];
  assert.ok(close(after, ruleAfter), `${after} h reported once destroyed, ${ruleAfter} h by the rule`);
  // Time stopped with the destroys: the figure no longer grows.
  await sleep(1500);
  assert.equal(await usedHours(), after);
  // Previous month: the part of the boundary sandbox before the month began. (The first row was
  // destroyed behind Paddock's back, so nothing of it was rolled up: it is the rule alone above.)
  const lastMonth = (await stack.sql('select seconds from usage_rollups where account_id = $1 and period_start < $2', [a.id, monthStart])) as {
    seconds: number;
  }[];
  assert.equal(lastMonth.length, 1);
  assert.ok(Math.abs(lastMonth[0]!.seconds - 10 * 60) < 1, `${lastMonth[0]!.seconds} s last month`);
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
