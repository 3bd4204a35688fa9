import { Worker, type Job } from 'bullmq';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import { openOrm } from '../shared/db/orm.ts';
import { createQueueRedis, createRequestRedis } from '../shared/redis.ts';
import { isDependencyUnavailable } from '../shared/unavailable.ts';
import { SANDBOX_QUEUE, createSandboxQueue, type JobName } from '../shared/jobs/catalogue.ts';
import { createRuntime } from '../shared/runtime/index.ts';
import type { WorkerDeps } from './context.ts';
import { createWorkerMetrics } from './metrics.ts';
import { createSandbox } from './processors/create-sandbox.ts';
import { destroySandboxJob, expireSandboxJob } from './processors/destroy-sandbox.ts';
import { startReaper } from './reaper.ts';
import { startMetricsServer } from './metrics-server.ts';

const PROCESSORS: Record<JobName, (job: Job, deps: WorkerDeps) => Promise<string>> = {
  create: createSandbox,
  destroy: destroySandboxJob,
  expire: expireSandboxJob,
};

export interface RunningWorkers {
  deps: WorkerDeps;
  metricsPort: number;
  close(): Promise<void>;
}

/** Starts this process's job processors and its reaper. */
export async function startWorkers(
  config: Config,
  log: Logger,
  options: { kubeConfig?: KubeConfig; reaper?: boolean } = {},
): Promise<RunningWorkers> {
  const orm = await openOrm(config.DATABASE_URL, config.PADDOCK_DB_POOL_MAX);
  // The queue handle (removing expiry jobs, metrics) fails fast while Redis is down, so the
  // reaper's PostgreSQL-driven sweep never waits on it; the worker's blocking connection waits.
  const queueRedis = createRequestRedis(config.REDIS_URL);
  const workerRedis = createQueueRedis(config.REDIS_URL);
  for (const r of [queueRedis, workerRedis]) r.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error'));
  const runtime = createRuntime(config, log, { kubeConfig: options.kubeConfig });
  const queue = createSandboxQueue(queueRedis, config.PADDOCK_REDIS_PREFIX);
  // Without a listener BullMQ prints its errors raw on stderr; connection errors are logged above.
  queue.on('error', (err: Error) => {
    if (!isDependencyUnavailable(err)) log.warn({ err: err.message }, 'queue error');
  });
  const deps: WorkerDeps = { config, orm, queue, runtime, log, metrics: createWorkerMetrics({ queue, orm }) };

  const worker = new Worker(
    SANDBOX_QUEUE,
    async (job) => {
      const processor = PROCESSORS[job.name as JobName];
      if (!processor) throw new Error(`unknown job ${job.name}`);
      const started = performance.now();
      const due = job.timestamp + (job.opts.delay ?? 0);
      deps.metrics.jobLatency.observe({ job: job.name }, Math.max(0, Date.now() - due) / 1000);
      try {
        const outcome = await processor(job, deps);
        deps.metrics.jobDuration.observe({ job: job.name, outcome: 'ok' }, (performance.now() - started) / 1000);
        return outcome;
      } catch (err) {
        deps.metrics.jobDuration.observe({ job: job.name, outcome: 'error' }, (performance.now() - started) / 1000);
        log.warn({ err, job: job.name, jobId: job.id, attempt: job.attemptsMade + 1 }, 'job failed');
        throw err;
      }
    },
    {
      connection: workerRedis,
      prefix: `${config.PADDOCK_REDIS_PREFIX}:bull`,
      concurrency: config.PADDOCK_WORKER_CONCURRENCY,
      lockDuration: config.PADDOCK_JOB_LOCK_SECONDS * 1000,
      stalledInterval: config.PADDOCK_JOB_LOCK_SECONDS * 1000,
      maxStalledCount: 3,
    },
  );
  worker.on('error', (err) => log.warn({ err: err.message }, 'worker error'));
  const reaper = options.reaper === false ? undefined : startReaper(deps);
  const metricsServer = await startMetricsServer(deps.metrics.registry, config.PADDOCK_WORKER_METRICS_PORT, () => worker.isRunning());

  let closing: Promise<void> | undefined;
  return {
    deps,
    metricsPort: metricsServer.port,
    close: () =>
      (closing ??= (async () => {
        await reaper?.stop();
        await new Promise((resolve) => metricsServer.server.close(resolve));
        await worker.close(); // waits for the jobs in progress to finish
        await deps.queue.close();
        await runtime.close();
        await orm.close(true);
        queueRedis.disconnect();
        workerRedis.disconnect();
      })()),
  };
}
