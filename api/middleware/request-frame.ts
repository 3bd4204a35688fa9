import type { Next } from 'koa';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/logger.ts';
import type { AppContext } from '../context.ts';
import type { ApiMetrics } from '../metrics.ts';
import { RequestState } from '../request-state.ts';
import { assignRequestId } from './request-id.ts';
import { setSecurityHeaders } from './security-headers.ts';
import { accessLog } from './access-log.ts';
import { armWriteDeadline } from './write-deadline.ts';
import { errorAnswerer, refuseUnrouted } from './errors.ts';

export interface RequestFrameOptions {
  orm: MikroORM;
  log: Logger;
  metrics: ApiMetrics;
  writeIdleMs: number;
}

/**
 * What every request gets around its route, in one frame: its state and id, the security headers,
 * errors made answers, the write deadline, then the access log. One async frame instead of one per
 * concern: each is a promise, a bound dispatch and a microtask on every request, for steps that
 * need not wait for anything.
 */
export function requestFrame({ orm, log, metrics, writeIdleMs }: RequestFrameOptions) {
  const logRequest = accessLog(log.child({}, { redact: [] }), metrics);
  const answerError = errorAnswerer(log);
  return async function frameRequest(ctx: AppContext, next: Next): Promise<void> {
    const started = process.hrtime.bigint();
    ctx.state = new RequestState(orm);
    try {
      assignRequestId(ctx);
      setSecurityHeaders(ctx.res);
      try {
        await next();
        refuseUnrouted(ctx);
      } catch (err) {
        answerError(ctx, err);
      }
      armWriteDeadline(ctx, writeIdleMs);
    } finally {
      logRequest(ctx, started);
    }
  };
}
