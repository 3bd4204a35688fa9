import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface ApiMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  duration: Histogram<'method' | 'route'>;
  rateLimited: Counter<'bucket'>;
  quotaRefusals: Counter<'code'>;
  bulkWaits: Counter;
}

// One registry per app instance, so that two instances in one process (as the tests run them)
// keep their own figures.
export function createApiMetrics(): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'paddock_api_' });
  return {
    registry,
    requests: new Counter({
      name: 'paddock_http_requests_total',
      help: 'HTTP requests answered, by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'paddock_http_request_duration_seconds',
      help: 'HTTP request duration, by route',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'paddock_rate_limit_refusals_total',
      help: 'Requests refused with 429 rate_limited, by bucket',
      labelNames: ['bucket'],
      registers: [registry],
    }),
    bulkWaits: new Counter({
      name: 'paddock_bulk_transfer_waits_total',
      help: "Times a bulk transfer (an archive) waited its turn on this process while other accounts' transfers flowed (services/bulk-transfers.ts)",
      registers: [registry],
    }),
    quotaRefusals: new Counter({
      name: 'paddock_quota_refusals_total',
      help: 'Sandbox creates refused by a quota, by code',
      labelNames: ['code'],
      registers: [registry],
    }),
  };
}
