import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Job } from 'bullmq';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox, waitForSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { jobCatalogue } from '../../shared/jobs/catalogue.ts';

test('a create job that runs after its sandbox was destroyed leaves nothing of it in the runtime', async () => {
  // No worker at first: the create job is held back until the destroy has run, as a retried job
  // (its worker gone, say) can come after it.
  const stack = await startSandboxStack({ workers: 0 });
  const a = await newAccount(stack.url);
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
  await queue.add('create', queued.data, { jobId, attempts: 1 });
  const outcome = await eventually('the create job ended', 30_000, async () => {
    const job = await Job.fromId(queue, jobId);
    return job?.finishedOn ? (job.returnvalue as unknown) : undefined;
  });
  assert.equal(outcome, 'skipped');
  assert.deepEqual((await worker.deps.runtime.list()).filter((h) => h.id === s.id), []);
});
