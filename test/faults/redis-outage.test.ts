import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startPrivateRedis } from '../helpers/private-services.ts';
import { startReplicas } from '../helpers/replicas.ts';
import { newAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { newId } from '../../shared/ids.ts';
import { assertConsistent, assertEachWorkerRuns, assertUnavailable, sandboxRows, strayOutput, timedCall, type TimedResponse } from './probes.ts';
import { eventually } from '../helpers/eventually.ts';
import { fetchPreviewUrl } from '../helpers/preview-fetch.ts';
import { localPreviewHost } from '../helpers/previews.ts';

// test-plan: once (the control plane's processes and stores fail here; what they ask of the
// runtime meanwhile is what the lifecycle suites drive on both runtimes)

// Redis stopped under two webs and two workers, then started again empty (no persistence: the
// queues, delayed expiry jobs, rate-limit buckets and key cache are all gone).
//
// What needs Redis, and so answers 503 service_unavailable with Retry-After while it is down:
//   every route authenticated by API key (the key lookup goes through the Redis cache),
//   signup and login (the per-IP auth bucket), revoking a key (the revocation tombstone), every
//   request through a preview (its connection cap).
// What does not: /healthz, /v1/openapi.json, and the dashboard-token routes that only read or
// write PostgreSQL (listing and minting API keys). /readyz answers 503 naming Redis.
// The reaper's sweep is driven by PostgreSQL alone: sandboxes reaching their cap during the
// outage are destroyed on time, and so are those whose expiry jobs the empty Redis lost.

const CAP_SECONDS = 8;
const ANSWER_WITHIN_MS = 3000;
const RECOVERY_WITHIN_MS = 30_000;

const redis = await startPrivateRedis();
const replicas = await startReplicas({
  redisUrl: redis.url,
  overrides: {
    PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
    PADDOCK_REAPER_SWEEP_SECONDS: '1',
    PADDOCK_JOB_LOCK_SECONDS: '2',
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '20',
    // The probes run back to back for the whole outage: the account's own bucket is not under test.
    PADDOCK_RATE_ACCOUNT_PER_MIN: '100000',
  },
});

test('Redis stopped, then restarted empty: 503 fast while down, caps kept, full recovery without restarting Paddock', { timeout: 170_000 }, async () => {
  const pids = [...replicas.webs, ...replicas.workers].map((p) => p.child.pid);
  const a = await newAccount(replicas.url, 'redis-outage');
  const created = async () => {
    const res = await call(replicas.url, 'POST', '/v1/sandboxes', { token: a.key, body: {} });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.status, 'running');
    return res.body as { id: string; expiresAt: string };
  };
  // A and B reach their cap during the outage, a little apart; C only after Redis is back.
  const sA = await created();
  await sleep(1500);
  const sB = await created();
  await sleep(Math.max(0, Date.parse(sA.expiresAt) - 3500 - Date.now()));
  const sC = await created();
  // A public preview of a port of C's: while Redis is down, whether a request may pass cannot be
  // told (the connection cap lives there), so it is refused with 503, not let through.
  const previewed = await call(replicas.url, 'POST', `/v1/sandboxes/${sC.id}/previews`, { token: a.key, body: { port: 8000, public: true } });
  assert.equal(previewed.status, 201, JSON.stringify(previewed.body));

  // A create in flight when Redis goes: its job is running on a worker (held at its last step,
  // the database update, by a row lock the test takes), so the job's completion event is lost
  // with Redis. The request must still answer as soon as the sandbox runs, not at its timeout.
  for (const w of replicas.workers) w.child.kill('SIGSTOP');
  const inFlightStarted = Date.now();
  const inFlight = timedCall(replicas.url, 'POST', '/v1/sandboxes', { token: a.key, body: {}, timeoutMs: 60_000 }).then((res) => ({
    res,
    at: Date.now(),
  }));
  const pendingId = await eventually('the in-flight create recorded', 20_000, async () =>
    (await sandboxRows(replicas.db, [a.id])).find((r) => r.status === 'pending')?.id,
  );
  const locker = await replicas.db.connect();
  await locker.query('begin');
  await locker.query('select id from sandboxes where id = $1 for update', [pendingId]);
  const lockerPid = (await locker.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  for (const w of replicas.workers) w.child.kill('SIGCONT');
  await eventually('the create job blocked at its database update', 20_000, async () => {
    const { rows } = await replicas.db.query('select 1 from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [lockerPid]);
    return rows.length > 0 ? true : undefined;
  });
  await redis.stop();
  await locker.query('commit');
  locker.release();
  const releasedAt = Date.now();
  const stoppedAt = Date.now();
  const times: Record<string, number[]> = {};
  const record = (what: string, res: TimedResponse) => (times[what] ??= []).push(res.ms);
  const probeOnce = async (web: string) => {
    const t = { timeoutMs: ANSWER_WITHIN_MS };
    const healthz = await timedCall(web, 'GET', '/healthz', t);
    assert.equal(healthz.status, 200);
    const readyz = await timedCall(web, 'GET', '/readyz', t);
    assert.equal(readyz.status, 503);
    assert.deepEqual(readyz.body.checks, { postgres: true, redis: false });
    record('readyz', readyz);
    assert.equal((await timedCall(web, 'GET', '/v1/openapi.json', t)).status, 200);
    for (const [method, path, body] of [
      ['GET', '/v1/sandboxes', undefined],
      ['GET', `/v1/sandboxes/${sC.id}`, undefined],
      ['POST', '/v1/sandboxes', {}],
      ['DELETE', `/v1/sandboxes/${sC.id}`, undefined],
      ['GET', '/v1/account', undefined],
      ['POST', `/v1/sandboxes/${sC.id}/exec`, { command: 'true' }],
      ['GET', `/v1/sandboxes/${sC.id}/files/ls?path=.`, undefined],
    ] as const) {
      const res = await timedCall(web, method, path, { ...t, token: a.key, body });
      assertUnavailable(res, `${method} ${path}`);
      record('api-key routes', res);
    }
    const started = Date.now();
    const preview = await fetchPreviewUrl(`http://${localPreviewHost(web, sC.id, 8000)}/`);
    assert.equal(preview.status, 503, `a preview: ${preview.status} ${preview.body}`);
    assert.equal(JSON.parse(preview.body).code, 'service_unavailable');
    assert.match(String(preview.headers['retry-after'] ?? ''), /^[1-9]\d*$/, 'a preview: Retry-After');
    assert.ok(Date.now() - started < ANSWER_WITHIN_MS, 'a preview answered late');
    const signup = await timedCall(web, 'POST', '/v1/auth/signup', { ...t, body: { email: `x${Date.now()}@example.test`, password: 'correct horse battery' } });
    assertUnavailable(signup, 'signup');
    const login = await timedCall(web, 'POST', '/v1/auth/login', { ...t, body: { email: a.email, password: a.password } });
    assertUnavailable(login, 'login');
    record('auth routes', login);
    // Dashboard routes that only touch PostgreSQL keep working.
    const keys = await timedCall(web, 'GET', '/v1/api-keys', { ...t, token: a.token });
    assert.equal(keys.status, 200, JSON.stringify(keys.body));
  };

  // While down: probe both webs until the sandboxes past their cap are destroyed (and at least 3 s).
  const overdueGone = async () => {
    const rows = await sandboxRows(replicas.db, [a.id]);
    return [sA.id, sB.id].every((id) => rows.find((r) => r.id === id)?.state === 'destroyed');
  };
  const deadline = Date.parse(sB.expiresAt) + 8000;
  while (Date.now() < stoppedAt + 3000 || !(await overdueGone())) {
    if (Date.now() > deadline) {
      const states = (await sandboxRows(replicas.db, [a.id])).map((r) => `${r.id} ${r.state}/${r.status}`);
      const logs = replicas.workers.map((w) => w.output().split('\n').filter((l) => /reaper|sweep|destroy/i.test(l)).slice(-20).join('\n'));
      assert.fail(`sandboxes past their cap were not destroyed while Redis was down: ${states.join(', ')}\n${logs.join('\n---\n')}`);
    }
    await Promise.all(replicas.webs.map((w) => probeOnce(w.url)));
    await sleep(100);
  }
  const { res: inFlightAnswer, at: inFlightAnsweredAt } = await inFlight;
  const inFlightAfterReleaseMs = inFlightAnsweredAt - releasedAt;
  assert.ok(inFlightAfterReleaseMs < 5000, `the in-flight create answered ${inFlightAfterReleaseMs} ms after its sandbox ran`);
  assert.equal(inFlightAnswer.status, 201, JSON.stringify(inFlightAnswer.body));
  assert.equal(inFlightAnswer.body.id, pendingId);
  assert.equal(inFlightAnswer.body.status, 'running');
  const rows = await sandboxRows(replicas.db, [a.id]);
  for (const s of [sA, sB]) {
    const row = rows.find((r) => r.id === s.id)!;
    assert.equal(row.destroy_reason, 'expired');
    const late = row.destroyed_at!.getTime() - Date.parse(s.expiresAt);
    assert.ok(late < 6000, `${s.id} destroyed ${late} ms past its cap`);
  }
  assert.equal((await replicas.runtime.get(sA.id))?.status ?? 'gone', 'gone');

  // Minting a key needs only PostgreSQL; revoking one needs Redis too (the tombstone that stops
  // it on every replica at once), so it answers 503 and the client retries.
  const minted = await timedCall(replicas.webs[0]!.url, 'POST', '/v1/api-keys', { token: a.token, body: { name: 'outage' }, timeoutMs: ANSWER_WITHIN_MS });
  assert.equal(minted.status, 201, JSON.stringify(minted.body));
  assertUnavailable(await timedCall(replicas.webs[1]!.url, 'DELETE', `/v1/api-keys/${minted.body.id}`, { token: a.token, timeoutMs: ANSWER_WITHIN_MS }), 'revoking a key');

  await redis.start();
  const restartedAt = Date.now();
  const outageMs = restartedAt - stoppedAt;
  const restartedBeforeCExpired = restartedAt < Date.parse(sC.expiresAt);

  // The same processes serve again: every web answers an API-key route 2xx, and /readyz is 200.
  const recovered = await Promise.all(
    replicas.webs.map((w) =>
      eventually(`web ${w.index} serving again`, RECOVERY_WITHIN_MS, async () => {
        const res = await timedCall(w.url, 'GET', '/v1/sandboxes', { token: a.key, timeoutMs: ANSWER_WITHIN_MS });
        const ready = await timedCall(w.url, 'GET', '/readyz', { timeoutMs: ANSWER_WITHIN_MS });
        return res.status === 200 && ready.status === 200 ? Date.now() - restartedAt : undefined;
      }),
    ),
  );
  // And the workers take jobs again: a create and a destroy through the queue, waited for.
  const createStarted = Date.now();
  const sD = await eventually('a create through the emptied queue', RECOVERY_WITHIN_MS, async () => {
    const res = await timedCall(replicas.url, 'POST', '/v1/sandboxes', { token: a.key, body: {}, timeoutMs: 20_000 });
    return res.status === 201 ? res : undefined;
  });
  assert.equal(sD.body.status, 'running', JSON.stringify(sD.body));
  const createMs = Date.now() - createStarted;
  const del = await timedCall(replicas.url, 'DELETE', `/v1/sandboxes/${sD.body.id}`, { token: a.key, timeoutMs: 20_000 });
  assert.equal(del.status, 200);
  assert.equal(del.body.state, 'destroyed');

  // Every web's job-events reader and every worker's job fetcher are connected again (a wait
  // would otherwise fall back on polling the database, and hide it).
  const probe = new Redis(redis.url);
  try {
    await eventually('job events and job fetching reconnected', RECOVERY_WITHIN_MS, async () => {
      const clients = (await probe.client('LIST')) as string;
      const count = (cmd: string) => clients.split('\n').filter((l) => l.includes(` cmd=${cmd} `)).length;
      return count('xread') >= replicas.webs.length && count('bzpopmin') >= replicas.workers.length ? true : undefined;
    });
  } finally {
    probe.disconnect();
  }
  // The revocation, retried, goes through; the key is refused everywhere.
  assert.equal((await call(replicas.url, 'DELETE', `/v1/api-keys/${minted.body.id}`, { token: a.token })).status, 204);
  for (const w of replicas.webs) assert.equal((await call(w.url, 'GET', '/v1/account', { token: minted.body.key })).status, 401);

  // C's expiry job went with the old Redis: the sweep still destroys it at its cap.
  await eventually('C destroyed at its cap', Math.max(0, Date.parse(sC.expiresAt) - Date.now()) + 10_000, async () => {
    const row = (await sandboxRows(replicas.db, [a.id])).find((r) => r.id === sC.id);
    return row?.state === 'destroyed' ? row : undefined;
  });
  const cRow = (await sandboxRows(replicas.db, [a.id])).find((r) => r.id === sC.id)!;
  assert.equal(cRow.destroy_reason, 'expired');
  assert.ok(cRow.destroyed_at!.getTime() - Date.parse(sC.expiresAt) < 6000);

  // Every worker came back: each takes creates again.
  const eachWorkerMs = await assertEachWorkerRuns(replicas, a.key);
  for (const p of [...replicas.webs, ...replicas.workers]) assert.ok(p.alive(), `${p.role} ${p.index} died: ${p.output().slice(-3000)}`);
  assert.deepEqual([...replicas.webs, ...replicas.workers].map((p) => p.child.pid), pids, 'no process was restarted');
  await assertConsistent(replicas, [a.id]);

  // Every process kept to its JSON log lines: no library printed raw errors for the outage.
  assert.deepEqual(strayOutput(replicas).slice(0, 20), []);
  const max = (xs: number[] = []) => Math.max(0, ...xs);
  console.log(
    JSON.stringify({
      outageMs,
      slowest503Ms: { apiKeyRoutes: max(times['api-key routes']), authRoutes: max(times['auth routes']), readyz: max(times.readyz) },
      probes: times['api-key routes']?.length,
      recoveryMs: recovered,
      firstCreateAfterRestartMs: createMs,
      restartedBeforeCExpired,
      createsPerWorkerAfterRestart: eachWorkerMs,
      inFlightCreate: { totalMs: inFlightAnswer.ms, afterUnblockedMs: inFlightAfterReleaseMs, startedMsBeforeOutage: stoppedAt - inFlightStarted },
    }),
  );
});

test('workers started while Redis is down still sweep: every sandbox past its cap is destroyed on time', { timeout: 170_000 }, async () => {
  const b = await newAccount(replicas.url, 'redis-restart');
  // An event whose announcement was lost long ago: the sweep's dispatch of it needs Redis, and
  // must not stall the sweep (BullMQ waits without limit for a Redis never reached).
  await replicas.db.query(
    `insert into events (id, account_id, type, data, created_at) values ($1, $2, 'sandbox.created', '{}', now() - interval '5 minutes')`,
    [newId('evt'), b.id],
  );
  await redis.stop();
  // As an orchestrator replaces crashed workers during the outage: they start without Redis.
  await Promise.all(replicas.workers.map((w) => replicas.restart('worker', w.index)));
  // Rows only (no runtime sandbox behind them), due one after the other: the second is only
  // destroyed if the sweep that destroyed the first did not stall on Redis.
  const due = [1000, 4000].map((ms) => ({ id: newId('sbx'), expiresAt: Date.now() + ms }));
  for (const z of due) {
    await replicas.db.query(
      `insert into sandboxes (id, account_id, state, status, image, created_at, ready_at, expires_at)
       values ($1, $2, 'active', 'running', 'test', now(), now(), $3)`,
      [z.id, b.id, new Date(z.expiresAt)],
    );
  }
  for (const z of due) {
    const row = await eventually(`${z.id} destroyed at its cap while Redis is down`, z.expiresAt - Date.now() + 8000, async () => {
      const found = (await sandboxRows(replicas.db, [b.id])).find((r) => r.id === z.id);
      return found?.state === 'destroyed' ? found : undefined;
    });
    assert.equal(row.destroy_reason, 'expired');
    assert.ok(row.destroyed_at!.getTime() - z.expiresAt < 5000, `${row.destroyed_at!.getTime() - z.expiresAt} ms late`);
  }

  await redis.start();
  for (const w of replicas.webs) {
    await eventually(`web ${w.index} serving again`, RECOVERY_WITHIN_MS, async () =>
      (await timedCall(w.url, 'GET', '/v1/sandboxes', { token: b.key, timeoutMs: ANSWER_WITHIN_MS })).status === 200 ? true : undefined,
    );
  }
  await assertEachWorkerRuns(replicas, b.key);
  await assertConsistent(replicas, [b.id], { inserted: due.map((z) => z.id) });
  assert.deepEqual(strayOutput(replicas).slice(0, 20), []);
  // And every process, through two outages, still stops cleanly.
  for (const p of [...replicas.workers, ...replicas.webs]) assert.equal((await replicas.kill(p.role, p.index, 'SIGTERM')).code, 0, `${p.role} ${p.index}`);
});
