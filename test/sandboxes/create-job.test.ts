import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job } from 'bullmq';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox, waitForSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { holdWrites } from '../helpers/held-writes.ts';
import { assertEventsMatchTransitions } from '../helpers/events.ts';
import { jobCatalogue, type JobPayload } from '../../shared/jobs/catalogue.ts';

// A create job that runs after its sandbox was destroyed, as a retried job (its worker gone, say)
// can. No worker at first: the create job is held back until the destroy has run.
async function destroyedBeforeItsCreate(name: string) {
  const stack = await startSandboxStack({ workers: 0 });
  const a = await newAccount(stack.url, name);
  const { body: s } = await createSandbox(stack.url, a.key, '?wait=false');
  assert.equal(s.status, 'pending');
  const queue = stack.apis[0]!.deps.queue;
  const jobId = jobCatalogue.create.jobId({ sandboxId: s.id });
  const queued = (await Job.fromId(queue, jobId))!;
  await queued.remove();
  const del = await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}?wait=false`, { token: a.key });
  assert.equal(del.status, 200, JSON.stringify(del.body));
  const worker = await stack.addWorker();
  const ended = await waitForSandbox(stack.url, a.key, s.id, (x) => x.state === 'destroyed', 30_000);
  assert.equal(ended.status, 'terminated');
  const runAgain = async (data: JobPayload<'create'>) => {
    await queue.add('create', data, { jobId, attempts: 1 });
    return eventually('the create job ended', 30_000, async () => {
      const job = await Job.fromId(queue, jobId);
      return job?.finishedOn ? (job.returnvalue as unknown) : undefined;
    });
  };
  const leftInRuntime = async () => (await worker.deps.runtime.list()).filter((h) => h.id === s.id);
  const types = async () => {
    const res = await call(stack.url, 'GET', '/v1/events', { token: a.key });
    return (res.body.data as { type: string; data: { sandbox?: { id: string } } }[]).filter((e) => e.data.sandbox?.id === s.id).map((e) => e.type);
  };
  return { queued: queued.data as JobPayload<'create'>, runAgain, leftInRuntime, types, db: stack.apis[0]!.deps.pg, accountId: a.id };
}

test('a late create job (its sandbox born over a second before) reads the row first and makes nothing for a destroyed sandbox', async () => {
  const t = await destroyedBeforeItsCreate('late-create');
  const late = Date.parse(t.queued.createdAt!) + 1100 - Date.now();
  if (late > 0) await sleep(late);
  assert.equal(await t.runAgain(t.queued), 'skipped');
  assert.deepEqual(await t.leftInRuntime(), []);
  assert.deepEqual(await t.types(), ['sandbox.created', 'sandbox.destroyed']);
});

test('a create job from an API before the row facts were carried reads the row, as a late one does', async () => {
  const t = await destroyedBeforeItsCreate('old-create');
  const { sandboxId, image, expiresAt } = t.queued;
  assert.equal(await t.runAgain({ sandboxId, image, expiresAt }), 'skipped');
  assert.deepEqual(await t.leftInRuntime(), []);
});

test('a fresh create job overtaken by a destroy makes the sandbox, finds it destroyed, and undoes it: nothing left, no sandbox.running', async () => {
  const t = await destroyedBeforeItsCreate('fresh-create');
  // As if taken at once after its row was written: it does not read the row before the create.
  assert.equal(await t.runAgain({ ...t.queued, createdAt: new Date().toISOString() }), 'destroyed-meanwhile');
  assert.deepEqual(await t.leftInRuntime(), []);
  assert.deepEqual(await t.types(), ['sandbox.created', 'sandbox.destroyed']);
  await assertEventsMatchTransitions(t.db, { accountId: t.accountId });
});

test("a create's jobs leave only once its commit is done: none exists while the commit is held, and the job then runs the sandbox", async () => {
  const stack = await startSandboxStack();
  const a = await newAccount(stack.url, 'outrun-commit');
  const db = stack.apis[0]!.deps.pg;
  // The create's second batch (the rows and the commit) is held here by a trigger on its
  // idempotency key that waits on the test's advisory lock.
  const held = await holdWrites(stack.apis[0]!.deps.config.DATABASE_URL, {
    name: 'create',
    lockId: 7_362_017,
    timing: 'after insert',
    table: 'idempotency_keys',
    when: "new.key like 'outrun-commit-%'",
  });
  try {
    const request = call(stack.url, 'POST', '/v1/sandboxes?wait=false', { token: a.key, body: {}, headers: { 'idempotency-key': 'outrun-commit-1' } });
    const id = await eventually('the create held before its commit', 30_000, async () => {
      const { rows } = await db.query<{ id: string }>(
        "select substring(query from 'sbx_[0-9a-z]{24}') as id from pg_stat_activity where wait_event_type = 'Lock' and query like '%insert into sandboxes%' and query not like '%pg_stat_activity%'",
      );
      return rows[0]?.id ?? undefined;
    });
    const queue = stack.apis[0]!.deps.queue;
    const jobId = jobCatalogue.create.jobId({ sandboxId: id });
    // Given the time a job beside the commit would have taken to leave and be taken.
    await sleep(1000);
    assert.equal(await Job.fromId(queue, jobId), undefined, 'no create job before the commit');
    await held.release();
    const created = await request;
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.id, id);
    const ended = await eventually('the create job ended', 30_000, async () => {
      const job = await Job.fromId(queue, jobId);
      return job?.finishedOn ? { returned: job.returnvalue as unknown } : undefined;
    });
    assert.equal(ended.returned, 'running');
    const running = await waitForSandbox(stack.url, a.key, id, (x) => x.status !== 'pending', 5_000);
    assert.equal(running.status, 'running');
    const exec = await call(stack.url, 'POST', `/v1/sandboxes/${running.id}/exec`, { token: a.key, body: { command: 'echo made' } });
    // Seen once in CI: an answer without stdout, its status and body not shown.
    assert.equal(exec.status, 200, JSON.stringify(exec.body));
    assert.equal(exec.body.stdout, 'made\n');
  } finally {
    await held.close();
  }
});
