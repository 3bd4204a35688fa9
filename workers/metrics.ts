import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Queue } from 'bullmq';
import type { MikroORM } from '@mikro-orm/postgresql';

export interface WorkerMetrics {
  registry: Registry;
  jobDuration: Histogram<'job' | 'outcome'>;
  jobLatency: Histogram<'job'>;
  reaperLag: Histogram<'source'>;
  sandboxesDestroyed: Counter<'reason'>;
}

/** Figures an operator watches; queue depth and active sandboxes are read at scrape time. */
export function createWorkerMetrics(sources?: { queue: Queue; orm: MikroORM }): WorkerMetrics {
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
        const rows = await sources.orm.em
          .fork()
          .execute<{ status: string; n: string }[]>("select status, count(*) as n from sandboxes where state = 'active' group by status");
        this.reset();
        for (const row of rows) this.set({ status: row.status }, Number(row.n));
      },
    });
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
    sandboxesDestroyed: new Counter({
      name: 'paddock_sandboxes_destroyed_total',
      help: 'Sandboxes destroyed, by reason',
      labelNames: ['reason'],
      registers: [registry],
    }),
  };
}
