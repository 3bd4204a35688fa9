import type { Next } from 'koa';
import type { Logger } from '../../shared/logger.ts';
import type { AppContext } from '../context.ts';
import type { ApiMetrics } from '../metrics.ts';

/** One JSON line and one metrics sample per request; never headers, bodies or query strings. */
export function accessLog(log: Logger, metrics: ApiMetrics) {
  return async function logRequest(ctx: AppContext, next: Next): Promise<void> {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      metrics.requests.inc({ method: ctx.method, route, status: String(ctx.status) });
      metrics.duration.observe({ method: ctx.method, route }, seconds);
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
    }
  };
}
