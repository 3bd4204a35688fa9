import { DelayedError, Worker, type Job } from 'bullmq';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Redis } from 'ioredis';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import { closeOrm, openOrm } from '../shared/db/orm.ts';
import { createQueueRedis, createRequestRedis } from '../shared/redis.ts';
import { startQueues } from '../shared/jobs/ready-queue.ts';
import { SANDBOX_QUEUE, type JobName } from '../shared/jobs/catalogue.ts';
import { WEBHOOK_QUEUE, type WebhookJobName } from '../shared/jobs/webhooks.ts';
import { EventAnnouncer } from '../shared/events/announce.ts';
import { ReadViews } from '../shared/cache/read-views.ts';
import { InFlightLeases } from '../shared/leases.ts';
import { LeaseTurns } from '../shared/jobs/turns.ts';
import { createRuntime } from '../shared/runtime/index.ts';
import { webhookCipher } from '../shared/webhooks/secrets.ts';
import { systemTransport, type WebhookTransport } from '../shared/webhooks/transport.ts';
import { ShutdownSteps } from '../shared/shutdown.ts';
import type { WorkerDeps } from './context.ts';
import { refillPoolJob } from './processors/refill-pool.ts';
import { takeSnapshotJob } from './processors/take-snapshot.ts';
import { createWorkerMetrics } from './metrics.ts';
import { createSandboxJob } from './processors/create-sandbox.ts';
import { destroySandboxJob, expireSandboxJob, expiringSandboxJob } from './processors/destroy-sandbox.ts';
import { dispatchEventJob } from './processors/webhook-dispatch.ts';
import { deliverWebhookJob } from './processors/webhook-deliver.ts';
import { startReaper } from './reaper.ts';
import { startMetricsServer } from './metrics-server.ts';
import { SandboxLifecycle } from '../shared/sandboxes/lifecycle.ts';
import { PgLifecycleStore } from '../shared/sandboxes/pg-store.ts';
import { Snapshots } from '../shared/snapshots/snapshots.ts';
import { snapshotStore } from '../shared/snapshots/store.ts';

type Processor = (job: Job, deps: WorkerDeps, token?: string) => Promise<string>;

const PROCESSORS: Record<JobName, Processor> = {
  create: createSandboxJob,
  destroy: destroySandboxJob,
  expire: expireSandboxJob,
  expiring: expiringSandboxJob,
  refill: refillPoolJob,
  snapshot: takeSnapshotJob,
};

// The webhook processors take only what they use, cut here from the worker's whole set.
const WEBHOOK_PROCESSORS: Record<WebhookJobName, Processor> = {
  dispatch: (job, deps) => dispatchEventJob(job, { unitOfWork: () => deps.orm.em.fork(), webhookQueue: deps.webhookQueue }),
  deliver: (job, deps, token) =>
    deliverWebhookJob(
      job,
      {
        unitOfWork: () => deps.orm.em.fork(),
        config: deps.config,
        metrics: deps.metrics,
        leases: deps.leases,
        turns: deps.turns,
        webhookCipher: deps.webhookCipher,
        transport: deps.transport,
        events: deps.events,
      },
      token,
    ),
};

export interface RunningWorkers {
  deps: WorkerDeps;
  metricsPort: number;
  /** What close is still waiting for. */
  shutdownSteps: ShutdownSteps;
  close(): Promise<void>;
}

/** Starts this process's job processors and its reaper. */
export async function startWorkers(
  config: Config,
  log: Logger,
  options: { kubeConfig?: KubeConfig; reaper?: boolean; webhookTransport?: WebhookTransport } = {},
): Promise<RunningWorkers> {
  const orm = await openOrm(config.DATABASE_URL, config.PADDOCK_DB_POOL_MAX);
  // The queue handle (removing expiry jobs, metrics) fails fast while Redis is down, so the
  // reaper's PostgreSQL-driven sweep never waits on it; the workers' blocking connections wait.
  // Webhooks have a queue and a blocking connection of their own: receivers, however slow, never
  // take the sandbox jobs' slots.
  const queueRedis = createRequestRedis(config.REDIS_URL);
  const workerRedis = createQueueRedis(config.REDIS_URL);
  const webhookRedis = createQueueRedis(config.REDIS_URL);
  for (const r of [queueRedis, workerRedis, webhookRedis]) r.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error'));
  const runtime = await createRuntime(config, log, { kubeConfig: options.kubeConfig });
  // Before any job: a failure here is only the first create's to retry.
  await runtime.warm?.().catch((err: unknown) => log.warn({ err }, 'the runtime could not get ready ahead of its first create'));
  const { queue, webhookQueue } = await startQueues(queueRedis, config.PADDOCK_REDIS_PREFIX, log);
  if (config.PADDOCK_WEBHOOK_ALLOW_LOCAL) log.warn('PADDOCK_WEBHOOK_ALLOW_LOCAL is set: webhooks may go to localhost (development only)');
  const metrics = createWorkerMetrics({ queue, unitOfWork: () => orm.em.fork() });
  // The workers only mark views stale: the API replicas read them.
  const events = new EventAnnouncer(webhookQueue, queueRedis, config.PADDOCK_REDIS_PREFIX, log, new ReadViews(queueRedis, config.PADDOCK_REDIS_PREFIX, 0));
  const snapshots = new Snapshots({ em: orm.em, runtime, store: snapshotStore(config), announcer: events, log }, config);
  const deps: WorkerDeps = {
    config,
    orm,
    queue,
    redis: queueRedis,
    runtime,
    log,
    metrics,
    webhookQueue,
    events,
    leases: new InFlightLeases(queueRedis, config.PADDOCK_REDIS_PREFIX),
    turns: new LeaseTurns(queueRedis, config.PADDOCK_REDIS_PREFIX, webhookQueue),
    webhookCipher: webhookCipher(config),
    transport: options.webhookTransport ?? systemTransport,
    snapshots,
    sandboxes: new SandboxLifecycle(
      {
        store: new PgLifecycleStore(orm, events),
        runtime,
        clock: { now: () => new Date() },
        log,
        onFailed: () => metrics.sandboxesDestroyed.inc({ reason: 'failed' }),
        workspaces: snapshots,
      },
      config,
    ),
  };

  // Its port first: a worker that cannot serve its probes fails before it takes any job.
  let running: (() => boolean) | undefined;
  const metricsServer = await startMetricsServer(
    deps.metrics.registry,
    { port: config.PADDOCK_WORKER_METRICS_PORT, host: config.PADDOCK_WORKER_METRICS_HOST, token: config.PADDOCK_METRICS_TOKEN },
    () => running?.() === true,
  ).catch(async (err: unknown) => {
    await Promise.allSettled([queue.close(), webhookQueue.close(), queueRedis.quit(), workerRedis.quit(), webhookRedis.quit(), orm.close(true)]);
    throw err;
  });
  const worker = startWorker(SANDBOX_QUEUE, PROCESSORS, workerRedis, config.PADDOCK_WORKER_CONCURRENCY, deps);
  const webhookWorker = startWorker(WEBHOOK_QUEUE, WEBHOOK_PROCESSORS, webhookRedis, config.PADDOCK_WEBHOOK_WORKER_CONCURRENCY, deps);
  running = () => worker.isRunning() && webhookWorker.isRunning();
  const reaper = options.reaper === false ? undefined : startReaper(deps);

  let closing: Promise<void> | undefined;
  const shutdownSteps = new ShutdownSteps();
  return {
    deps,
    metricsPort: metricsServer.port,
    shutdownSteps,
    close: () =>
      (closing ??= (async () => {
        // Taking no new job comes first: a worker told to stop finishes what it holds, nothing more.
        await Promise.all([
          shutdownSteps.run('sandbox jobs in progress', worker.close()),
          shutdownSteps.run('webhook jobs in progress', webhookWorker.close()),
          shutdownSteps.run('the reaper sweep in progress', reaper?.stop() ?? Promise.resolve()),
        ]);
        await shutdownSteps.run('the metrics server', new Promise((resolve) => metricsServer.server.close(resolve)));
        await shutdownSteps.run('the queues', Promise.all([deps.queue.close(), webhookQueue.close()]));
        await shutdownSteps.run('the runtime', runtime.close());
        await shutdownSteps.run('the database pool', closeOrm(orm, log));
        queueRedis.disconnect();
        workerRedis.disconnect();
        webhookRedis.disconnect();
      })()),
  };
}

function startWorker(name: string, processors: Record<string, Processor>, connection: Redis, concurrency: number, deps: WorkerDeps): Worker {
  const { config, log } = deps;
  const worker = new Worker(
    name,
    async (job, token) => {
      const processor = processors[job.name];
      if (!processor) throw new Error(`unknown job ${job.name}`);
      const started = performance.now();
      const due = job.timestamp + (job.opts.delay ?? 0);
      // A job moved back to the delayed set (a webhook waiting its turn) is not late: first runs only.
      if (job.attemptsStarted <= 1) deps.metrics.jobLatency.observe({ job: job.name }, Math.max(0, Date.now() - due) / 1000);
      try {
        const outcome = await processor(job, deps, token);
        deps.metrics.jobDuration.observe({ job: job.name, outcome: 'ok' }, (performance.now() - started) / 1000);
        return outcome;
      } catch (err) {
        if (err instanceof DelayedError) throw err;
        deps.metrics.jobDuration.observe({ job: job.name, outcome: 'error' }, (performance.now() - started) / 1000);
        log.warn({ err, job: job.name, jobId: job.id, attempt: job.attemptsMade + 1 }, 'job failed');
        throw err;
      }
    },
    {
      connection,
      prefix: `${config.PADDOCK_REDIS_PREFIX}:bull`,
      concurrency,
      lockDuration: config.PADDOCK_JOB_LOCK_SECONDS * 1000,
      stalledInterval: config.PADDOCK_JOB_LOCK_SECONDS * 1000,
      maxStalledCount: 3,
    },
  );
  worker.on('error', (err) => log.warn({ err: err.message }, 'worker error'));
  return worker;
}
