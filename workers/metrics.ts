import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ormPool } from '../shared/db/orm.ts';
import { activeCountsByStatus } from '../shared/repositories/sandboxes.ts';
import { countDisabledEndpoints, countRetriesPending } from '../shared/repositories/webhooks.ts';

export interface WorkerMetrics {
  registry: Registry;
  jobDuration: Histogram<'job' | 'outcome'>;
  jobLatency: Histogram<'job'>;
  reaperLag: Histogram<'source'>;
  reaperSweep: Histogram;
  sandboxesDestroyed: Counter<'reason'>;
  webhookDeliveries: Counter<'outcome'>;
  webhookLatency: Histogram;
  webhookDeferrals: Counter<'bound'>;
}

/** Figures an operator watches; queue depth and active sandboxes are read at scrape time. */
export function createWorkerMetrics(sources?: { queue: Queue; unitOfWork: () => EntityManager }): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'paddock_worker_' });
  if (sources) {
    new Gauge({
      name: 'paddock_queue_jobs',
      help: 'Jobs in the sandbox queue, by state',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        const counts = await sources.queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
        for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'paddock_active_sandboxes',
      help: 'Sandboxes not destroyed, by status',
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        const counts = await activeCountsByStatus(await ormPool(sources.unitOfWork()));
        this.reset();
        for (const { status, count } of counts) this.set({ status }, count);
      },
    });
    webhookGauges(registry, sources.unitOfWork);
  }
  return {
    registry,
    jobDuration: new Histogram({
      name: 'paddock_job_duration_seconds',
      help: 'Job processing time, by job type and outcome',
      labelNames: ['job', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    jobLatency: new Histogram({
      name: 'paddock_job_latency_seconds',
      help: 'Time from when a job was due to when a worker started it, by job type',
      labelNames: ['job'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    reaperLag: new Histogram({
      name: 'paddock_reaper_lag_seconds',
      help: 'Seconds past expiresAt at which an expired sandbox was destroyed, by what destroyed it',
      labelNames: ['source'],
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
    reaperSweep: new Histogram({
      name: 'paddock_reaper_sweep_seconds',
      help: 'Time one reaper sweep took, by the worker that held the sweep lock',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    sandboxesDestroyed: new Counter({
      name: 'paddock_sandboxes_destroyed_total',
      help: 'Sandboxes destroyed, by reason',
      labelNames: ['reason'],
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: 'paddock_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by outcome: success (2xx), failure (another status), error (no answer: timeout, connection, TLS), refused (a forbidden address, never connected to)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    webhookDeferrals: new Counter({
      name: 'paddock_webhook_deferrals_total',
      help: 'Webhook deliveries put back in the delayed set to wait their turn, by the bound they met: endpoint (PADDOCK_WEBHOOK_CONCURRENCY_PER_ENDPOINT) or account (PADDOCK_WEBHOOK_CONCURRENCY_PER_ACCOUNT)',
      labelNames: ['bound'],
      registers: [registry],
    }),
    webhookLatency: new Histogram({
      name: 'paddock_webhook_delivery_latency_seconds',
      help: "Seconds from an event's transition to the receiver's 2xx",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 21600, 86400],
      registers: [registry],
    }),
  };
}

/** Read from PostgreSQL at scrape time, so every worker reports the same figures. */
function webhookGauges(registry: Registry, unitOfWork: () => EntityManager): void {
  new Gauge({
    name: 'paddock_webhook_retries_pending',
    help: 'Webhook deliveries that failed at least once and will be tried again',
    registers: [registry],
    async collect() {
      this.set(await countRetriesPending(unitOfWork()));
    },
  });
  new Gauge({
    name: 'paddock_webhook_endpoints_disabled',
    help: 'Webhook endpoints disabled after failing for the whole retry window',
    registers: [registry],
    async collect() {
      this.set(await countDisabledEndpoints(unitOfWork()));
    },
  });
}
