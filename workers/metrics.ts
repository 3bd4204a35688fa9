import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface WorkerMetrics {
  registry: Registry;
  jobDuration: Histogram<'job' | 'outcome'>;
  reaperLag: Histogram<'source'>;
  sandboxesDestroyed: Counter<'reason'>;
}

export function createWorkerMetrics(): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'paddock_worker_' });
  return {
    registry,
    jobDuration: new Histogram({
      name: 'paddock_job_duration_seconds',
      help: 'Job processing time, by job type and outcome',
      labelNames: ['job', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
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
