import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startPrivatePostgres } from '../helpers/private-services.ts';
import { startReplicas } from '../helpers/replicas.ts';
import { newAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { uniqueEmail } from '../helpers/config.ts';
import { assertConsistent, assertEachWorkerRuns, assertUnavailable, sandboxRows, strayOutput, timedCall, type TimedResponse } from './probes.ts';
import { eventually } from '../helpers/eventually.ts';

// test-plan: once (the control plane's processes and stores fail here; what they ask of the
// runtime meanwhile is what the lifecycle suites drive on both runtimes)

// PostgreSQL stopped (fast shutdown: every open session is cut) under two webs and two workers,
// then started again.
//
// What needs PostgreSQL, and so answers 503 service_unavailable with Retry-After while it is
// down: every /v1 route but the OpenAPI document (accounts, keys, sandboxes, quotas all live
// there; an API key found in the Redis cache still leads to a route that reads PostgreSQL).
// What does not: /healthz, /v1/openapi.json. /readyz answers 503 naming PostgreSQL.
// Sandboxes reaching their cap during the outage are destroyed once it is back (the expiry jobs
// retry; the sweep runs again), within a sweep and the jobs' backoff.

const CAP_SECONDS = 6;
const READY_TIMEOUT_SECONDS = 15;
const ANSWER_WITHIN_MS = 3000;
const RECOVERY_WITHIN_MS = 30_000;

const postgres = await startPrivatePostgres();
const replicas = await startReplicas({
  databaseUrl: postgres.url,
  overrides: {
    PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
    PADDOCK_REAPER_SWEEP_SECONDS: '1',
    PADDOCK_JOB_LOCK_SECONDS: '2',
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '20',
    // The probes run back to back for the whole outage: the account's own bucket is not under test.
    PADDOCK_RATE_ACCOUNT_PER_MIN: '100000',
    PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS: String(READY_TIMEOUT_SECONDS),
  },
});

test('PostgreSQL stopped and restarted: 503 fast while down, full recovery without restarting Paddock', { timeout: 170_000 }, async () => {
  const pids = [...replicas.webs, ...replicas.workers].map((p) => p.child.pid);
  const a = await newAccount(replicas.url, 'pg-outage');
  const create = await call(replicas.url, 'POST', '/v1/sandboxes', { token: a.key, body: {} });
  assert.equal(create.status, 201, JSON.stringify(create.body));
  assert.equal(create.body.status, 'running');
  const sA = create.body as { id: string; expiresAt: string };
  // Warm the key cache on both webs' Redis: during the outage the key is found, the route is not.
  for (const w of replicas.webs) assert.equal((await call(w.url, 'GET', '/v1/sandboxes', { token: a.key })).status, 200);

  // A create in flight across the outage: recorded, its job waiting for a worker (both paused).
  for (const w of replicas.workers) w.child.kill('SIGSTOP');
  const inFlight = timedCall(replicas.url, 'POST', '/v1/sandboxes', { token: a.key, body: {}, timeoutMs: 60_000 }).then((res) => ({ res, at: Date.now() }));
  const inFlightId = await eventually('the in-flight create recorded', 20_000, async () =>
    (await sandboxRows(replicas.db, [a.id])).find((r) => r.status === 'pending')?.id,
  );
  await postgres.stop();
  const stoppedAt = Date.now();
  for (const w of replicas.workers) w.child.kill('SIGCONT');
  const times: Record<string, number[]> = {};
  const record = (what: string, res: TimedResponse) => (times[what] ??= []).push(res.ms);
  const probeOnce = async (web: string) => {
    const t = { timeoutMs: ANSWER_WITHIN_MS };
    assert.equal((await timedCall(web, 'GET', '/healthz', t)).status, 200);
    const readyz = await timedCall(web, 'GET', '/readyz', t);
    assert.equal(readyz.status, 503);
    assert.deepEqual(readyz.body.checks, { postgres: false, redis: true });
    record('readyz', readyz);
    assert.equal((await timedCall(web, 'GET', '/v1/openapi.json', t)).status, 200);
    for (const [method, path, token, body] of [
      ['GET', '/v1/sandboxes', a.key, undefined],
      ['GET', `/v1/sandboxes/${sA.id}`, a.key, undefined],
      ['POST', '/v1/sandboxes', a.key, {}],
      ['DELETE', `/v1/sandboxes/${sA.id}`, a.key, undefined],
      ['GET', '/v1/account', a.key, undefined],
      ['POST', `/v1/sandboxes/${sA.id}/exec`, a.key, { command: 'true' }],
      ['GET', `/v1/sandboxes/${sA.id}/files/ls?path=.`, a.key, undefined],
      ['GET', '/v1/api-keys', a.token, undefined],
      ['POST', '/v1/auth/signup', undefined, { email: uniqueEmail('pg-outage'), password: 'correct horse battery' }],
      ['POST', '/v1/auth/login', undefined, { email: a.email, password: a.password }],
    ] as const) {
      const res = await timedCall(web, method, path, { ...t, token, body });
      assertUnavailable(res, `${method} ${path}`);
      record('/v1 routes', res);
    }
  };
  // While down: probe both webs for a few seconds, and past A's cap.
  while (Date.now() < stoppedAt + 3000 || Date.now() < Date.parse(sA.expiresAt) + 1000) {
    await Promise.all(replicas.webs.map((w) => probeOnce(w.url)));
    await sleep(100);
  }
  for (const p of [...replicas.webs, ...replicas.workers]) assert.ok(p.alive(), `${p.role} ${p.index} died during the outage: ${p.output().slice(-3000)}`);

  await postgres.start();
  const restartedAt = Date.now();
  const outageMs = restartedAt - stoppedAt;

  const recovered = await Promise.all(
    replicas.webs.map((w) =>
      eventually(`web ${w.index} serving again`, RECOVERY_WITHIN_MS, async () => {
        const res = await timedCall(w.url, 'GET', '/v1/sandboxes?state=all', { token: a.key, timeoutMs: ANSWER_WITHIN_MS });
        const ready = await timedCall(w.url, 'GET', '/readyz', { timeoutMs: ANSWER_WITHIN_MS });
        return res.status === 200 && ready.status === 200 ? Date.now() - restartedAt : undefined;
      }),
    ),
  );
  // The in-flight create answered once the database was back: its sandbox, however it ended.
  const { res: inFlightAnswer, at: inFlightAt } = await inFlight;
  assert.equal(inFlightAnswer.status, 201, JSON.stringify(inFlightAnswer.body));
  assert.equal(inFlightAnswer.body.id, inFlightId);
  // Running; or failed, or past its cap (six seconds here) and being or already destroyed, if the
  // outage outlasted it.
  const { status, state, destroyReason } = inFlightAnswer.body;
  const ending = (status === 'terminating' || state === 'destroyed') && ['failed', 'expired'].includes(destroyReason);
  assert.ok(status === 'running' || status === 'pending' || ending, JSON.stringify(inFlightAnswer.body));
  // A passed its cap while PostgreSQL was down: it is destroyed soon after it is back.
  const aRow = await eventually('A destroyed after the outage', 20_000, async () => {
    const row = (await sandboxRows(replicas.db, [a.id])).find((r) => r.id === sA.id);
    return row?.state === 'destroyed' ? row : undefined;
  });
  assert.equal(aRow.destroy_reason, 'expired');
  const reapedAfterRestartMs = aRow.destroyed_at!.getTime() - restartedAt;

  // Signups, keys and sandboxes work again, through the same processes.
  const b = await newAccount(replicas.url, 'pg-after');
  const createStarted = Date.now();
  const sB = await timedCall(replicas.url, 'POST', '/v1/sandboxes', { token: b.key, body: {}, timeoutMs: 20_000 });
  assert.equal(sB.status, 201, JSON.stringify(sB.body));
  assert.equal(sB.body.status, 'running');
  const createMs = Date.now() - createStarted;
  const del = await timedCall(replicas.url, 'DELETE', `/v1/sandboxes/${sB.body.id}`, { token: b.key, timeoutMs: 20_000 });
  assert.equal(del.body.state, 'destroyed');
  // Every worker came back: each takes creates again.
  const eachWorkerMs = await assertEachWorkerRuns(replicas, b.key);
  for (const p of [...replicas.webs, ...replicas.workers]) assert.ok(p.alive(), `${p.role} ${p.index} died: ${p.output().slice(-3000)}`);
  assert.deepEqual([...replicas.webs, ...replicas.workers].map((p) => p.child.pid), pids, 'no process was restarted');
  await eventually('every sandbox settled', (READY_TIMEOUT_SECONDS + 15) * 1000, async () => {
    const rows = await sandboxRows(replicas.db, [a.id, b.id]);
    return rows.every((r) => r.state === 'destroyed' || r.status === 'running') ? true : undefined;
  });
  await assertConsistent(replicas, [a.id, b.id]);

  // Every process kept to its JSON log lines: no library printed raw errors for the outage.
  assert.deepEqual(strayOutput(replicas).slice(0, 20), []);
  // And they still stop cleanly.
  for (const p of [...replicas.workers, ...replicas.webs]) assert.equal((await replicas.kill(p.role, p.index, 'SIGTERM')).code, 0, `${p.role} ${p.index}: ${p.output().slice(-3000)}`);
  const max = (xs: number[] = []) => Math.max(0, ...xs);
  console.log(
    JSON.stringify({
      outageMs,
      slowest503Ms: { v1Routes: max(times['/v1 routes']), readyz: max(times.readyz) },
      probes: times['/v1 routes']?.length,
      recoveryMs: recovered,
      expiredSandboxReapedAfterRestartMs: reapedAfterRestartMs,
      firstCreateAfterRestartMs: createMs,
      createsPerWorkerAfterRestart: eachWorkerMs,
      inFlightCreate: { status: `${inFlightAnswer.body.status}/${inFlightAnswer.body.destroyReason}`, answeredAfterRestartMs: inFlightAt - restartedAt },
    }),
  );
});
