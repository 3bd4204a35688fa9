import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startReplicas } from '../helpers/replicas.ts';
import { newAccount, type TestAccount } from '../helpers/accounts.ts';
import { assertConsistent, sandboxRows, timedCall, type TimedResponse } from './probes.ts';
import { eventually } from '../helpers/eventually.ts';

// Workers killed with SIGKILL (no shutdown, jobs cut anywhere: mid-create, mid-destroy, holding a
// runtime lock) under a steady stream of creates and destroys through two webs. Their jobs are
// taken over once their locks lapse (PADDOCK_JOB_LOCK_SECONDS=2).

// Long enough that a create whose job is cut twice (each takeover waits out a lock) still runs
// before its cap on a loaded CI machine: at 10 s, one such create in a whole-suite run on the
// kubernetes stand-in answered with its sandbox already expired.
const CAP_SECONDS = 20;
const STREAM_AFTER_LAST_KILL_MS = 2000;
const ACCOUNTS = 4;

const replicas = await startReplicas({
  overrides: {
    PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
    PADDOCK_REAPER_SWEEP_SECONDS: '1',
    PADDOCK_JOB_LOCK_SECONDS: '2',
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '100',
  },
});

interface Outcome {
  account: string;
  op: 'create' | 'destroy';
  wait: boolean;
  res: TimedResponse;
}

async function stream(a: TestAccount, until: () => number, outcomes: Outcome[]): Promise<void> {
  let n = 0;
  while (Date.now() < until()) {
    n++;
    const wait = n % 3 !== 0;
    const created = await timedCall(replicas.url, 'POST', `/v1/sandboxes${wait ? '' : '?wait=false'}`, { token: a.key, body: {}, timeoutMs: 60_000 });
    outcomes.push({ account: a.id, op: 'create', wait, res: created });
    if (created.status !== 201 || n % 4 === 0) continue; // every fourth is kept, to expire at its cap
    const destroyWait = n % 2 === 0;
    const destroyed = await timedCall(replicas.url, 'DELETE', `/v1/sandboxes/${created.body.id}${destroyWait ? '' : '?wait=false'}`, {
      token: a.key,
      timeoutMs: 60_000,
    });
    outcomes.push({ account: a.id, op: 'destroy', wait: destroyWait, res: destroyed });
  }
}

test('workers killed with SIGKILL under creates and destroys: every request ends as asked, none duplicated, orphaned or past its cap', { timeout: 170_000 }, async () => {
  const accounts = await Promise.all(Array.from({ length: ACCOUNTS }, (_, i) => newAccount(replicas.url, `kill${i}`)));
  const outcomes: Outcome[] = [];
  const started = Date.now();
  let until = Infinity;
  const streams = Promise.all(accounts.map((a) => stream(a, () => until, outcomes)));

  // Kill one worker, start it again, then kill the other: each time the other one is alone.
  await sleep(1500);
  const first = await replicas.kill('worker', 0, 'SIGKILL');
  assert.equal(first.signal, 'SIGKILL');
  await sleep(1000);
  await replicas.restart('worker', 0);
  await sleep(1500);
  const second = await replicas.kill('worker', 1, 'SIGKILL');
  assert.equal(second.signal, 'SIGKILL');
  until = Date.now() + STREAM_AFTER_LAST_KILL_MS;
  await streams;
  const streamedMs = Date.now() - started;

  // Every request had a normal answer: nothing failed for the kills (the webs were never touched).
  const bad = outcomes.filter((o) => o.res.status !== (o.op === 'create' ? 201 : 200));
  assert.deepEqual(bad.map((o) => `${o.op} ${o.res.status} ${JSON.stringify(o.res.body)}`), []);
  for (const o of outcomes) {
    if (o.op === 'create' && o.wait) assert.equal(o.res.body.status, 'running', JSON.stringify(o.res.body));
    if (o.op === 'create' && !o.wait) assert.equal(o.res.body.status, 'pending');
    if (o.op === 'destroy' && o.wait) assert.equal(o.res.body.state, 'destroyed', JSON.stringify(o.res.body));
  }
  const creates = outcomes.filter((o) => o.op === 'create');
  const destroys = new Map(outcomes.filter((o) => o.op === 'destroy').map((o) => [o.res.body.id as string, o]));

  // Settled: every sandbox running or destroyed as asked; exactly one per successful create.
  const ids = accounts.map((a) => a.id);
  await eventually('every sandbox settled', 30_000, async () => {
    const rows = await sandboxRows(replicas.db, ids);
    return rows.every((r) => r.state === 'destroyed' || r.status === 'running') ? rows : undefined;
  });
  const rows = await assertConsistent(replicas, ids);
  assert.equal(rows.length, creates.length, 'one sandbox per successful create, none duplicated');
  assert.deepEqual(rows.map((r) => r.id).sort(), creates.map((o) => o.res.body.id as string).sort());
  for (const r of rows) {
    if (destroys.has(r.id)) {
      assert.equal(r.state, 'destroyed', `${r.id} was destroyed by its user`);
      assert.equal(r.destroy_reason, 'user');
    } else {
      assert.notEqual(r.destroy_reason, 'failed', `${r.id} failed`);
      assert.ok(r.state === 'active' || r.destroy_reason === 'expired', `${r.id}: ${r.state} ${r.destroy_reason}`);
    }
  }

  // The kept ones reach their cap: every one destroyed for it, within a sweep and some slack.
  const lastExpiry = Math.max(...rows.map((r) => r.expires_at.getTime()));
  const final = await eventually('every sandbox destroyed at its cap', lastExpiry - Date.now() + 15_000, async () => {
    const now = await sandboxRows(replicas.db, ids);
    return now.every((r) => r.state === 'destroyed') ? now : undefined;
  });
  const lateness = final.filter((r) => r.destroy_reason === 'expired').map((r) => r.destroyed_at!.getTime() - r.expires_at.getTime());
  assert.ok(Math.max(0, ...lateness) < 6000, `destroyed up to ${Math.max(...lateness)} ms past the cap`);
  await assertConsistent(replicas, ids);
  assert.deepEqual(await replicas.runtime.list(), []);

  const latencies = creates.filter((o) => o.wait).map((o) => o.res.ms).sort((x, y) => x - y);
  console.log(
    JSON.stringify({
      streamedMs,
      creates: creates.length,
      destroys: destroys.size,
      expired: lateness.length,
      createWaitMs: { p50: latencies[Math.floor(latencies.length / 2)], max: latencies.at(-1) },
      expiredLatenessMaxMs: Math.max(0, ...lateness),
    }),
  );
});
