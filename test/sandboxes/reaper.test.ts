import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Job } from 'bullmq';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox, waitForSandbox } from '../helpers/sandboxes.ts';
import { newId } from '../../shared/ids.ts';
import { jobCatalogue } from '../../shared/jobs/catalogue.ts';
import { assertEventsMatchTransitions } from '../helpers/events.ts';
import { sweepOnce } from '../../workers/reaper.ts';
import { destroySandbox } from '../../workers/processors/destroy-sandbox.ts';

// A cap of a few seconds and a one-second sweep, so expiry is observable in a test. Not 3 s, nor
// 6: a create on a host running two suites at once took longer than that (CI answered `terminating`).
const stack = await startSandboxStack({
  overrides: { PADDOCK_SESSION_CAP_SECONDS: '12', PADDOCK_REAPER_SWEEP_SECONDS: '1', PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10' },
});
const worker = () => stack.workers[0]!.deps;

/**
 * Follows a sandbox until its destroy is done. The lag is from its cap to its destroy's start (the
 * first look that finds it no longer running, or its destroyedAt if that is earlier): how long the
 * runtime then takes to tear it down is the runtime's, and on a loaded host it was seconds.
 */
async function watchExpiry(key: string, id: string): Promise<{ gone: any; lagMs: number }> {
  let begunAt = Infinity;
  const gone = await waitForSandbox(stack.url, key, id, (x) => {
    if (x.status !== 'running') begunAt = Math.min(begunAt, Date.now());
    return x.state === 'destroyed';
  }, 15_000);
  const expiresAt = Date.parse(gone.expiresAt);
  assert.ok(Date.parse(gone.destroyedAt) >= expiresAt, `destroyed at ${gone.destroyedAt}, before its cap ${gone.expiresAt}`);
  return { gone, lagMs: Math.min(begunAt, Date.parse(gone.destroyedAt)) - expiresAt };
}

test('the delayed expiry job destroys a sandbox within 6 s of its cap (a loaded host runs it late), with reason expired', async () => {
  const a = await newAccount(stack.url);
  const { body: s } = await createSandbox(stack.url, a.key);
  assert.equal(s.status, 'running');
  const { gone, lagMs } = await watchExpiry(a.key, s.id);
  assert.equal(gone.destroyReason, 'expired');
  assert.equal(gone.status, 'terminated');
  assert.ok(lagMs < 6000, `destroy began ${lagMs} ms after expiresAt`);
  assert.equal((await worker().runtime.get(s.id))?.status ?? 'gone', 'gone');
  await assertEventsMatchTransitions(stack.apis[0]!.deps.pg, { accountId: a.id });
});

test('with its expiry job lost (Redis flushed), the sweep still destroys an overdue sandbox', async () => {
  const a = await newAccount(stack.url);
  const { body: s } = await createSandbox(stack.url, a.key);
  // What a Redis that restarted empty would have lost: the delayed job, and the jobs' bookkeeping.
  const removed = await worker().queue.remove(jobCatalogue.expire.jobId({ sandboxId: s.id }));
  assert.equal(removed, 1);
  const { gone, lagMs } = await watchExpiry(a.key, s.id);
  assert.equal(gone.destroyReason, 'expired');
  // Nothing but the sweep (every second here) ends it before the runtime's backstop, 120 s past the
  // cap: well within that, with room for a loaded machine's sweep to run late.
  assert.ok(lagMs < 15_000, `destroy began ${lagMs} ms after expiresAt`);
  await assertEventsMatchTransitions(stack.apis[0]!.deps.pg, { accountId: a.id });
});

test('destroys racing for one sandbox (its user, the sweep, a retried job) end it once: one sandbox.destroyed, its time billed once', async () => {
  const a = await newAccount(stack.url);
  const { body: s } = await createSandbox(stack.url, a.key);
  const [deleted, ...swept] = await Promise.all([
    call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key }),
    ...[1, 2, 3].map(() => destroySandbox(worker(), s.id, 'expired', 'sweep')),
  ]);
  assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
  // The DELETE's own job destroys it too: at most one of the sweep's three does.
  assert.ok(swept.filter((r) => r === 'destroyed').length <= 1, `the sweep's destroys answered ${swept.join(', ')}`);
  const gone = await waitForSandbox(stack.url, a.key, s.id, (x) => x.state === 'destroyed', 15_000);
  assert.equal(gone.status, 'terminated');
  const pg = stack.apis[0]!.deps.pg;
  const { rows } = await pg.query<{ seconds: number }>('select seconds from usage_rollups where account_id = $1', [a.id]);
  const ran = (Date.parse(gone.destroyedAt) - Date.parse(gone.readyAt)) / 1000;
  assert.equal(rows.length, 1);
  assert.ok(Math.abs(rows[0]!.seconds - ran) < 0.01, `${rows[0]!.seconds} s billed for ${ran} s run`);
  await assertEventsMatchTransitions(pg, { accountId: a.id });
});

test('the sweep removes runtime sandboxes that have no active row (orphans)', async () => {
  const id = newId('sbx');
  // Under Kubernetes the pending pod is already listed, so a sweep may collect it before create
  // returns (create then fails: the pod is being deleted). Either way the sweep is what removes it.
  const created = await worker()
    .runtime.create({ id, accountId: 'acct_orphan', capSeconds: 60 })
    .then(() => 'running', (err: Error) => err.message);
  assert.ok(created === 'running' || /delet/i.test(created), created);
  const deadline = Date.now() + 10_000;
  // Until it is gone altogether: "terminated" is a destroy still in progress.
  while (Date.now() < deadline && (await worker().runtime.get(id)) !== undefined) await sleep(100);
  assert.equal((await worker().runtime.get(id))?.status ?? 'gone', 'gone');
});

test('a runtime sandbox whose create job has not settled is no orphan: its row may still be committing', async () => {
  const id = newId('sbx');
  const jobId = jobCatalogue.create.jobId({ sandboxId: id });
  // Its create job queued for later, as one a worker has not reached yet (or one running while
  // its create's commit is held up: the job leaves beside the commit).
  await worker().queue.add('create', { sandboxId: id }, { jobId, delay: 3_600_000 });
  assert.equal(await worker().runtime.create({ id, accountId: 'acct_unsettled', capSeconds: 60 }).then(() => 'running', (err: Error) => err.message), 'running');
  try {
    // The stack sweeps every second; two sweeps of our own besides.
    await sweepOnce(worker());
    await sleep(2500);
    await sweepOnce(worker());
    assert.equal((await worker().runtime.get(id))?.status, 'running', 'kept while its create job is queued');
  } finally {
    await (await Job.fromId(worker().queue, jobId))?.remove();
  }
  // With the job gone, nothing will settle it: the next sweeps remove it.
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && (await worker().runtime.get(id)) !== undefined) await sleep(100);
  assert.equal((await worker().runtime.get(id))?.status ?? 'gone', 'gone');
});

test('a sandbox whose create is picked up after the ready timeout is failed, not started', async () => {
  const quiet = await startSandboxStack({ workers: 0, overrides: { PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS: '1' } });
  const a = await newAccount(quiet.url);
  const res = await createSandbox(quiet.url, a.key, '?wait=false');
  assert.equal(res.body.status, 'pending');
  await sleep(1500);
  await quiet.addWorker({ reaper: false });
  const failed = await waitForSandbox(quiet.url, a.key, res.body.id, (x) => x.state === 'destroyed', 10_000);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.destroyReason, 'failed');
  assert.match(failed.failureMessage, /ready within 1 s/);
  const account = await call(quiet.url, 'GET', '/v1/account', { token: a.key });
  assert.equal(account.body.usage.concurrentSandboxes.active, 0);
  await assertEventsMatchTransitions(quiet.apis[0]!.deps.pg, { accountId: a.id });
});

test('a deployment sweeps its own sandboxes only: another one on the same database leaves them to it', async () => {
  // A deployment of its own (another Redis prefix and runtime) whose workers do not sweep; this
  // file's stack sweeps every second.
  const held = await startSandboxStack({ reaper: false });
  const a = await newAccount(held.url);
  const { body: s } = await createSandbox(held.url, a.key);
  assert.equal(s.status, 'running');
  // Overdue and asked to end, its jobs never run: what every sweep takes up, but only its own.
  const pg = held.apis[0]!.deps.pg;
  await pg.query(`update sandboxes set status = 'terminating', destroy_reason = 'user', expires_at = now() - interval '1 minute' where id = $1`, [s.id]);
  await sleep(3000);
  const untouched = (await pg.query('select state from sandboxes where id = $1', [s.id])).rows[0];
  assert.equal(untouched.state, 'active', "another deployment's sweep took it up");
  assert.equal((await held.workers[0]!.deps.runtime.get(s.id))?.status, 'running');
  // Its own deployment's sweep ends it, in its own runtime.
  assert.ok(await sweepOnce(held.workers[0]!.deps), 'the sweep ran');
  const gone = await waitForSandbox(held.url, a.key, s.id, (x) => x.state === 'destroyed', 10_000);
  assert.equal(gone.destroyReason, 'user');
  assert.equal((await held.workers[0]!.deps.runtime.get(s.id))?.status ?? 'gone', 'gone');
});
