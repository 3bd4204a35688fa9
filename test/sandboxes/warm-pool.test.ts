import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDeployment } from '../helpers/deployment.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';
import { holdWrites } from '../helpers/held-writes.ts';
import { assertEventsMatchTransitions } from '../helpers/events.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { Redis } from 'ioredis';
import { createSandboxQueue, jobCatalogue } from '../../shared/jobs/catalogue.ts';

// The warm pool: sandboxes started ahead of demand, of no account, claimed by creates.
const POOL = 2;
const CAP_SECONDS = 600;
const stack = await startDeployment({
  overrides: {
    PADDOCK_WARM_POOL_SIZE: String(POOL),
    PADDOCK_REAPER_SWEEP_SECONDS: '1',
    PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10',
  },
});

interface WarmRow {
  id: string;
  status: string;
}
const queueRedis = new Redis(stack.config.REDIS_URL, { maxRetriesPerRequest: null });
const queue = createSandboxQueue(queueRedis, stack.config.PADDOCK_REDIS_PREFIX);
after(async () => {
  await queue.close();
  queueRedis.disconnect();
});

const warmRows = async () => (await stack.sql(`select id, status from warm_sandboxes where deployment = $1 order by id`, [stack.config.PADDOCK_REDIS_PREFIX])) as WarmRow[];

/** The pool once it holds POOL ready sandboxes, each running in the runtime. */
async function fullPool(): Promise<string[]> {
  return eventually('the pool full and running', 60_000, async () => {
    const rows = await warmRows();
    if (rows.length !== POOL || rows.some((r) => r.status !== 'ready')) return undefined;
    for (const r of rows) if ((await stack.runtime.get(r.id))?.status !== 'running') return undefined;
    return rows.map((r) => r.id);
  }, 200);
}

const exec = async (key: string, id: string, command: string) => call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: key, body: { command } });

test('the pool fills with running sandboxes of no account: neither listed, counted nor billed', async () => {
  const pooled = await fullPool();
  const rows = (await stack.sql('select id from sandboxes where id = any($1)', [pooled])) as unknown[];
  assert.deepEqual(rows, [], 'a pooled sandbox has no sandbox row until claimed');
  const a = await newAccount(stack.url);
  const account = await call(stack.url, 'GET', '/v1/account', { token: a.key });
  assert.deepEqual(account.body.usage.concurrentSandboxes.active, 0);
  assert.equal(account.body.usage.sandboxHours.used, 0);
  // Several sweeps later the reaper has taken none of them for an orphan.
  await sleep(2500);
  assert.deepEqual((await fullPool()).sort(), pooled.sort());
});

test('a create claims a pooled sandbox: running at once, its cap from the claim, the create-time env applied; the pool refills', async () => {
  const pooled = await fullPool();
  const a = await newAccount(stack.url);
  // Its account's view is kept before the claim: the claim marks it stale before answering.
  assert.equal((await call(stack.url, 'GET', '/v1/account', { token: a.key })).body.usage.concurrentSandboxes.active, 0);
  const res = await createSandbox(stack.url, a.key, '?wait=false', { env: { GREETING: 'from-the-pool' }, metadata: { via: 'pool' } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const s = res.body;
  assert.ok(pooled.includes(s.id), `${s.id} is not one of the pool's ${pooled.join(', ')}`);
  assert.equal(s.status, 'running', 'running without waiting');
  assert.ok(s.readyAt);
  assert.equal(Date.parse(s.expiresAt) - Date.parse(s.createdAt), CAP_SECONDS * 1000);
  const out = await exec(a.key, s.id, 'echo "$GREETING"; ls -A /workspace | wc -l');
  assert.equal(out.status, 200, JSON.stringify(out.body));
  assert.equal(out.body.stdout, 'from-the-pool\n0\n', 'its env applied, its workspace empty');
  const account = await call(stack.url, 'GET', '/v1/account', { token: a.key });
  assert.equal(account.body.usage.concurrentSandboxes.active, 1);
  // Answered before its jobs were queued (it runs already): they follow, its expiry at its cap.
  const expiry = await eventually('the expiry job queued', 10_000, async () => (await queue.getJob(jobCatalogue.expire.jobId({ sandboxId: s.id }))) ?? undefined);
  const dueAt = expiry.timestamp + (expiry.opts.delay ?? 0);
  assert.ok(Math.abs(dueAt - Date.parse(s.expiresAt)) < 1000, `due at ${new Date(dueAt).toISOString()}, cap ${s.expiresAt}`);
  // Refilled with new sandboxes; the claimed one is the account's alone.
  const refilled = await eventually('the pool refilled', 60_000, async () => {
    const ids = await fullPool();
    return ids.includes(s.id) ? undefined : ids;
  });
  assert.equal(refilled.length, POOL);
  await assertEventsMatchTransitions(stack.sql, { sandboxIds: [s.id] });
  // Destroyed like any other, and never back in the pool.
  const del = await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
  assert.equal(del.status, 200);
  assert.equal(del.body.state, 'destroyed');
  assert.equal((await stack.runtime.get(s.id))?.status ?? 'gone', 'gone');
  assert.ok(!(await warmRows()).some((r) => r.id === s.id));
  await assertEventsMatchTransitions(stack.sql, { sandboxIds: [s.id] });
});

test('more creates at once than the pool holds: each gets its own sandbox, the rest started cold', async () => {
  const pooled = await fullPool();
  const a = await newAccount(stack.url);
  const results = await Promise.all(Array.from({ length: POOL + 2 }, () => createSandbox(stack.url, a.key)));
  for (const r of results) assert.equal(r.status, 201, JSON.stringify(r.body));
  const ids = results.map((r) => r.body.id as string);
  assert.equal(new Set(ids).size, ids.length, 'no sandbox handed out twice');
  for (const r of results) assert.equal(r.body.status, 'running');
  assert.ok(ids.filter((id) => pooled.includes(id)).length <= POOL);
  for (const id of ids) assert.equal((await exec(a.key, id, 'echo ok')).body.stdout, 'ok\n');
  await assertEventsMatchTransitions(stack.sql, { sandboxIds: ids });
  for (const id of ids) await call(stack.url, 'DELETE', `/v1/sandboxes/${id}?wait=false`, { token: a.key });
});

test('a create from the pool is refused at either cap exactly as a cold one, and a refusal takes nothing from the pool', async () => {
  const pooled = await fullPool();
  const a = await newAccount(stack.url);
  await stack.sql('update accounts set concurrent_sandboxes_limit = 1 where id = $1', [a.id]);
  // Three at once against a cap of one: the caps' check is in the claim's own statement, under the account's lock.
  const results = await Promise.all(Array.from({ length: 3 }, () => createSandbox(stack.url, a.key)));
  const created = results.filter((r) => r.status === 201);
  assert.equal(created.length, 1, results.map((r) => `${r.status} ${r.body.code ?? r.body.status}`).join(', '));
  for (const r of results.filter((x) => x.status !== 201)) assertProblem(r, 429, 'concurrent_sandbox_limit_reached');
  const taken = created[0]!.body.id as string;
  assert.ok(pooled.includes(taken), 'the one created came from the pool');
  assert.equal(created[0]!.body.status, 'running');
  const left = (await warmRows()).map((r) => r.id);
  assert.ok(pooled.filter((id) => id !== taken).every((id) => left.includes(id)), `the refusals took nothing: ${left.join(', ')}`);

  const b = await newAccount(stack.url);
  await stack.sql('update accounts set monthly_sandbox_hours_limit = 0 where id = $1', [b.id]);
  const before = (await warmRows()).filter((r) => r.status === 'ready').map((r) => r.id);
  assertProblem(await createSandbox(stack.url, b.key), 429, 'monthly_usage_limit_reached');
  const after = (await warmRows()).map((r) => r.id);
  assert.ok(before.every((id) => after.includes(id)), 'a refusal at the monthly cap took nothing either');
  assert.deepEqual(await stack.sql('select id from sandboxes where account_id = $1', [b.id]), []);
  await assertEventsMatchTransitions(stack.sql, { sandboxIds: [taken] });
  await call(stack.url, 'DELETE', `/v1/sandboxes/${taken}?wait=false`, { token: a.key });
});

test('a pooled sandbox that stops running in the pool is replaced, never handed out', async () => {
  const [victim] = await fullPool();
  await stack.runtime.destroy(victim!);
  await eventually('the dead one out of the pool and replaced', 60_000, async () => {
    const ids = await fullPool();
    return ids.includes(victim!) ? undefined : ids;
  });
  const a = await newAccount(stack.url);
  const res = await createSandbox(stack.url, a.key);
  assert.notEqual(res.body.id, victim);
  assert.equal((await exec(a.key, res.body.id, 'echo alive')).body.stdout, 'alive\n');
  await call(stack.url, 'DELETE', `/v1/sandboxes/${res.body.id}?wait=false`, { token: a.key });
});

test('a drained pool refills several starts at once, not one after another', async () => {
  await fullPool();
  const deployment = stack.config.PADDOCK_REDIS_PREFIX;
  // Each pooled sandbox, once its runtime sandbox runs, is held before it is marked ready: a refill
  // that started them one after another would never have two starting at once.
  const held = await holdWrites(stack.config.DATABASE_URL, {
    name: 'pool_ready',
    lockId: 7_362_117,
    timing: 'before update',
    table: 'warm_sandboxes',
    when: `new.deployment = '${deployment}' and new.status = 'ready'`,
  });
  try {
    // Drained at once, as the sweep takes dead sandboxes out: the next refill finds the whole pool missing.
    const drained = (await stack.sql('delete from warm_sandboxes where deployment = $1 returning id', [deployment])) as { id: string }[];
    assert.equal(drained.length, POOL);
    for (const { id } of drained) await stack.runtime.destroy(id);
    const starting = await eventually(`${POOL} pooled sandboxes running at once, each waiting to be marked ready`, 30_000, async () => {
      const rows = (await warmRows()).filter((r) => r.status === 'starting');
      if (rows.length !== POOL) return undefined;
      for (const r of rows) if ((await stack.runtime.get(r.id))?.status !== 'running') return undefined;
      return rows.map((r) => r.id);
    }, 50);
    await held.release();
    assert.deepEqual((await fullPool()).sort(), starting.sort());
  } finally {
    await held.close();
  }
});
