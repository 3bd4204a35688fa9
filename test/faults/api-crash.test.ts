import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startReplicas } from '../helpers/replicas.ts';
import { startPrivatePostgres, startPrivateRedis } from '../helpers/private-services.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { assertConsistent, sandboxRows } from './probes.ts';
import { eventually } from '../helpers/eventually.ts';
import { jobCatalogue } from '../../shared/jobs/catalogue.ts';

// test-plan: once (the control plane's processes and stores fail here; what they ask of the
// runtime meanwhile is what the lifecycle suites drive on both runtimes)

// A web process killed with SIGKILL while creates and destroys are in flight on it: some were not
// yet begun, some committed their row but never enqueued its jobs, some were waiting for a worker.
// The client sees an answer or a broken connection; whatever it saw, every sandbox ends running or
// destroyed, none is made twice (Idempotency-Key retries), and none holds quota for ever: a row
// whose jobs were never enqueued fails at PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS (the sweep).

const CAP = 3;
const READY_TIMEOUT_SECONDS = 10;
const LOOPS_PER_ACCOUNT = 3;

// A database and a Redis of the test's own: one scenario instruments them (a trigger, paused writes).
const postgres = await startPrivatePostgres();
const redisServer = await startPrivateRedis();
const replicas = await startReplicas({
  databaseUrl: postgres.url,
  redisUrl: redisServer.url,
  overrides: {
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: String(CAP),
    PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS: String(READY_TIMEOUT_SECONDS),
    PADDOCK_REAPER_SWEEP_SECONDS: '1',
    PADDOCK_JOB_LOCK_SECONDS: '2',
  },
});

interface Sent {
  account: TestAccount;
  op: 'create' | 'destroy';
  key?: string;
  sandboxId?: string;
  status?: number;
  headers?: Headers;
  body?: any;
  error?: string;
}

let seq = 0;

/** Creates and destroys on one web until it stops answering. */
async function loop(web: string, a: TestAccount, sent: Sent[]): Promise<void> {
  for (;;) {
    const n = ++seq;
    const key = `crash-${n}-${Date.now()}`;
    const create: Sent = { account: a, op: 'create', key };
    sent.push(create);
    try {
      const res = await call(web, 'POST', `/v1/sandboxes${n % 2 ? '?wait=false' : ''}`, {
        token: a.key,
        body: { metadata: { n: String(n) } },
        headers: { 'idempotency-key': key },
      });
      Object.assign(create, { status: res.status, headers: res.headers, body: res.body, sandboxId: res.body.id });
    } catch (err) {
      create.error = String((err as Error).cause ?? err);
      return;
    }
    if (create.status !== 201) continue;
    const destroy: Sent = { account: a, op: 'destroy', sandboxId: create.sandboxId };
    sent.push(destroy);
    try {
      const res = await call(web, 'DELETE', `/v1/sandboxes/${create.sandboxId}${n % 3 ? '?wait=false' : ''}`, { token: a.key });
      Object.assign(destroy, { status: res.status, headers: res.headers, body: res.body });
    } catch (err) {
      destroy.error = String((err as Error).cause ?? err);
      return;
    }
  }
}

test('a web killed after committing a sandbox, before enqueuing its jobs: the sweep fails it and frees its quota', { timeout: 170_000 }, async () => {
  const a = await newAccount(replicas.url, 'window');
  await replicas.db.query('update accounts set concurrent_sandboxes_limit = 1 where id = $1', [a.id]);
  const holder = await replicas.db.connect();
  // The create enqueues its jobs once its first batch (the account's row locked, the quotas read)
  // has answered, beside its commit: the test holds the account's row so the create waits in that
  // batch, then pauses writes on the test's own Redis, so that the create commits and its enqueue
  // waits.
  const admin = new Redis(redisServer.url);
  const blockedBy = async (pid: number) =>
    (await replicas.db.query<{ pid: number; query: string }>('select pid, query from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [pid])).rows;
  try {
    const holderPid = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    await holder.query('begin');
    await holder.query('select id from accounts where id = $1 for update', [a.id]);

    const web = replicas.webs[0]!;
    const request = call(web.url, 'POST', '/v1/sandboxes?wait=false', { token: a.key, body: {} }).then(
      (res) => ({ status: res.status, error: undefined }),
      (err: unknown) => ({ status: undefined, error: String(err) }),
    );
    // 1. The create waits in its transaction's first batch for the account's row.
    await eventually('the create waiting in its transaction', 20_000, async () => ((await blockedBy(holderPid)).length ? true : undefined));
    // 2. Redis stops taking writes (the rate limit's are done); the create then commits, and its
    //    enqueue waits.
    await admin.call('client', 'pause', '120000', 'WRITE');
    await holder.query('commit');
    await eventually('the create committed', 20_000, async () => ((await sandboxRows(replicas.db, [a.id])).length ? true : undefined));
    await sleep(200);
    // 3. Now kill it: committed, never enqueued.
    assert.equal((await replicas.kill('web', 0, 'SIGKILL')).signal, 'SIGKILL');
    await admin.call('client', 'unpause');
    const answer = await request;
    assert.equal(answer.status, undefined, 'the client saw a broken connection');
  } finally {
    await admin.call('client', 'unpause').catch(() => undefined);
    admin.disconnect();
    await holder.query('rollback').catch(() => undefined);
    holder.release();
  }

  const [row] = await sandboxRows(replicas.db, [a.id]);
  assert.ok(row, 'the sandbox row was committed');
  assert.equal(row.status, 'pending');
  const redis = new Redis(replicas.config.REDIS_URL);
  try {
    const jobKey = `${replicas.config.PADDOCK_REDIS_PREFIX}:bull:sandboxes:${jobCatalogue.create.jobId({ sandboxId: row.id })}`;
    assert.equal(await redis.exists(jobKey), 0, 'no create job was enqueued');
  } finally {
    redis.disconnect();
  }
  // While pending it holds the account's one place; at the ready timeout the sweep fails it.
  assertProblem(await call(replicas.url, 'POST', '/v1/sandboxes', { token: a.key, body: {} }), 429, 'concurrent_sandbox_limit_reached');
  const failed = await eventually('the half-made sandbox failed', (READY_TIMEOUT_SECONDS + 15) * 1000, async () => {
    const [now] = await sandboxRows(replicas.db, [a.id]);
    return now?.state === 'destroyed' ? now : undefined;
  });
  assert.equal(failed.status, 'failed');
  assert.equal(failed.destroy_reason, 'failed');
  const heldMs = failed.destroyed_at!.getTime() - Date.parse((await call(replicas.url, 'GET', `/v1/sandboxes/${row.id}`, { token: a.key })).body.createdAt);
  const next = await call(replicas.url, 'POST', '/v1/sandboxes', { token: a.key, body: {} });
  assert.equal(next.status, 201, JSON.stringify(next.body));
  assert.equal(next.body.status, 'running');
  await call(replicas.url, 'DELETE', `/v1/sandboxes/${next.body.id}`, { token: a.key });
  await assertConsistent(replicas, [a.id]);
  console.log(JSON.stringify({ halfMadeSandboxHeldQuotaMs: heldMs }));
  await replicas.restart('web', 0);
});

test('a web killed mid-request: an answer or an error, never a half-made sandbox holding quota', { timeout: 170_000 }, async () => {
  const accounts = await Promise.all([0, 1, 2].map((i) => newAccount(replicas.url, `crash${i}`)));
  const sent: Sent[] = [];
  const kills: number[] = [];
  // Round one on web 0, round two on web 1: each killed while its loops are in full flow.
  for (const index of [0, 1]) {
    const web = replicas.webs[index]!.url;
    const loops = Promise.all(accounts.flatMap((a) => Array.from({ length: LOOPS_PER_ACCOUNT }, () => loop(web, a, sent))));
    await sleep(1200 + Math.floor(Math.random() * 600));
    const inFlight = sent.filter((s) => s.status === undefined && !s.error).length;
    const exit = await replicas.kill('web', index, 'SIGKILL');
    assert.equal(exit.signal, 'SIGKILL');
    kills.push(inFlight);
    await loops;
  }
  await replicas.restart('web', 0);

  // What the client saw: normal answers (201, 200, or a quota 429), or a broken connection.
  for (const s of sent.filter((x) => x.status !== undefined)) {
    if (s.status === 429) assertProblem({ status: s.status, headers: s.headers!, body: s.body }, 429, 'concurrent_sandbox_limit_reached');
    else assert.equal(s.status, s.op === 'create' ? 201 : 200, JSON.stringify(s.body));
  }
  const broken = sent.filter((s) => s.error);
  assert.ok(broken.length >= 2, `the kills cut requests: ${JSON.stringify(broken)}`);

  // A client retries a create that broke with the same Idempotency-Key: it gets the sandbox, or is
  // told the first attempt is still in progress, never a second sandbox.
  const retried = await Promise.all(
    broken
      .filter((s) => s.op === 'create')
      .map(async (s) => {
        const res = await call(replicas.url, 'POST', '/v1/sandboxes?wait=false', {
          token: s.account.key,
          body: { metadata: { n: s.key!.split('-')[1]! } },
          headers: { 'idempotency-key': s.key! },
        });
        if (res.status === 409) assertProblem(res, 409, 'idempotency_conflict');
        else if (res.status !== 429) assert.equal(res.status, 201, JSON.stringify(res.body));
        return res.status;
      }),
  );

  // Settled: every row is running or destroyed; those whose jobs were lost failed at the ready timeout.
  const ids = accounts.map((a) => a.id);
  const rows = await eventually('every sandbox settled', (READY_TIMEOUT_SECONDS + 20) * 1000, async () => {
    const now = await sandboxRows(replicas.db, ids);
    return now.every((r) => r.state === 'destroyed' || r.status === 'running') ? now : undefined;
  });
  await assertConsistent(replicas, ids);
  // None duplicated: one row per idempotency key, and every 201 the client saw is a row.
  const { rows: keyed } = await replicas.db.query<{ key: string; sandbox_id: string }>(
    'select key, sandbox_id from idempotency_keys where account_id = any($1)',
    [ids],
  );
  assert.equal(new Set(keyed.map((k) => k.key)).size, keyed.length);
  assert.equal(rows.length, keyed.length, 'every sandbox was made by exactly one idempotency key');
  for (const s of sent.filter((x) => x.op === 'create' && x.status === 201)) {
    assert.equal(keyed.find((k) => k.key === s.key)?.sandbox_id, s.sandboxId);
  }
  // Destroys the client saw accepted end destroyed, even those whose job died with the web.
  for (const s of sent.filter((x) => x.op === 'destroy' && x.status === 200)) {
    assert.equal(rows.find((r) => r.id === s.sandboxId)?.state, 'destroyed', `destroyed ${s.sandboxId}`);
  }

  // No quota held for ever: once the client destroys what it lists, each account has its whole cap.
  for (const a of accounts) {
    const active = await call(replicas.url, 'GET', '/v1/sandboxes', { token: a.key });
    for (const s of active.body.data) await call(replicas.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
    const usage = await call(replicas.url, 'GET', '/v1/account', { token: a.key });
    assert.equal(usage.body.usage.concurrentSandboxes.active, 0);
  }
  for (const a of accounts) {
    const refill = await Promise.all(Array.from({ length: CAP + 2 }, () => call(replicas.url, 'POST', '/v1/sandboxes?wait=false', { token: a.key, body: {} })));
    assert.equal(refill.filter((r) => r.status === 201).length, CAP, refill.map((r) => r.status).join(','));
  }

  const failed = rows.filter((r) => r.destroy_reason === 'failed').length;
  console.log(
    JSON.stringify({
      requests: sent.length,
      inFlightAtKills: kills,
      brokenConnections: broken.length,
      retriedCreates: retried.join(','),
      sandboxes: rows.length,
      failedAtReadyTimeout: failed,
    }),
  );
});
