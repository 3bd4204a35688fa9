import type { Logger } from '../../shared/logger.ts';
import type { AppContext } from '../context.ts';
import type { ApiMetrics } from '../metrics.ts';
import type { Counter, Histogram } from 'prom-client';

/**
 * One JSON line and one metrics sample per request; never headers, bodies or query strings.
 * The line holds only fixed, non-secret fields, so it skips the redaction the main logger does.
 */
export function accessLog(log: Logger, metrics: ApiMetrics): (ctx: AppContext, startedNs: bigint) => void {
  // Labelled children looked up once per (method, route, status) rather than on every request.
  const counters = new Map<string, Counter.Internal>();
  const histograms = new Map<string, Histogram.Internal<'method' | 'route'>>();
  return function logRequest(ctx, startedNs) {
    const seconds = Number(process.hrtime.bigint() - startedNs) / 1e9;
    const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
    const status = String(ctx.status);
    const routeKey = `${ctx.method} ${route}`;
    const counterKey = `${routeKey} ${status}`;
    let counter = counters.get(counterKey);
    if (!counter) counters.set(counterKey, (counter = metrics.requests.labels(ctx.method, route, status)));
    let histogram = histograms.get(routeKey);
    if (!histogram) histograms.set(routeKey, (histogram = metrics.duration.labels(ctx.method, route)));
    counter.inc();
    histogram.observe(seconds);
    log.info(
      {
        requestId: ctx.state.requestId,
        accountId: ctx.state.auth?.accountId,
        method: ctx.method,
        route,
        status: ctx.status,
        ms: Math.round(seconds * 1e4) / 10,
      },
      'request',
    );
  };
}
