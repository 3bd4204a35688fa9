import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Job } from 'bullmq';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox, waitForSandbox } from '../helpers/sandboxes.ts';
import { envOf, exited, startRole } from '../helpers/processes.ts';
import { jobCatalogue } from '../../shared/jobs/catalogue.ts';

test('a worker killed with SIGKILL while creating: the job is retried, one sandbox runs, none orphaned', async () => {
  // No in-process worker at first: the create job can only go to the real worker process.
  const stack = await startSandboxStack({ workers: 0, overrides: { PADDOCK_JOB_LOCK_SECONDS: '2' } });
  // The metrics port left at its default: any free one, named in the log (two stacks share this host).
  const { PADDOCK_WORKER_METRICS_PORT: _unset, ...env } = envOf(stack.config, stack.kubeConfig);
  const proc = startRole('workers/main.ts', { ...env, PADDOCK_LOG_LEVEL: 'info' });
  try {
    // A cold start on a busy host (type stripping the whole import graph) can take seconds.
    for (let i = 0; i < 1200 && !proc.output().includes('worker started'); i++) await sleep(25);
    assert.match(proc.output(), /worker started/);
    const started = proc.output().split('\n').find((l) => l.includes('worker started'))!;
    const metricsPort = (JSON.parse(started) as { metricsPort: number }).metricsPort;
    assert.ok(metricsPort > 0 && metricsPort !== 9091, `metricsPort ${metricsPort}`);
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status, 200);
    const a = await newAccount(stack.url);
    const { body: s } = await createSandbox(stack.url, a.key, '?wait=false');
    const jobId = jobCatalogue.create.jobId({ sandboxId: s.id });
    const queue = stack.apis[0]!.deps.queue;
    let state = 'unknown';
    for (let i = 0; i < 2000; i++) {
      state = (await (await Job.fromId(queue, jobId))?.getState()) ?? 'missing';
      if (state !== 'waiting' && state !== 'prioritized') break;
      await sleep(2);
    }
    proc.kill('SIGKILL');
    assert.equal((await exited(proc)).signal, 'SIGKILL');

    // A surviving worker takes the stalled job over once its lock lapses.
    const survivor = await stack.addWorker();
    const running = await waitForSandbox(stack.url, a.key, s.id, (x) => x.status === 'running' || x.state === 'destroyed', 30_000);
    assert.equal(running.status, 'running', `job was ${state} at the kill; sandbox ${JSON.stringify(running)}`);
    const held = (await survivor.deps.runtime.list()).filter((h) => h.id === s.id);
    assert.equal(held.length, 1);
    assert.equal(held[0]!.status, 'running');
    const all = await call(stack.url, 'GET', '/v1/sandboxes?state=all', { token: a.key });
    assert.equal(all.body.data.length, 1);
    // And it can still be destroyed cleanly.
    const del = await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
    assert.equal(del.body.state, 'destroyed');
    assert.equal((await survivor.deps.runtime.list()).filter((h) => h.id === s.id && h.status === 'running').length, 0);
  } finally {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  }
});
