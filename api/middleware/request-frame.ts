import type { Next } from 'koa';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/logger.ts';
import type { Socket } from 'node:net';
import type { AppContext } from '../context.ts';
import type { ApiMetrics } from '../metrics.ts';
import { RequestState } from '../request-state.ts';
import { assignRequestId } from './request-id.ts';
import { setSecurityHeaders } from './security-headers.ts';
import { accessLog } from './access-log.ts';
import { armWriteDeadline } from './write-deadline.ts';
import { errorAnswerer, refuseUnrouted } from './errors.ts';
import { bytesMoved } from '../../shared/reclaim.ts';
import { onProbation } from '../connection-allowance.ts';
import { serverBusy } from './probation.ts';
import type { ErrorCode } from '../../shared/errors.ts';

/**
 * What any request may be answered, whatever its route: a fault (500), a backing service out of
 * reach (503), or, on a connection on probation, server_busy instead of a refusal.
 */
export const FRAME_ERRORS: readonly ErrorCode[] = ['internal_error', 'service_unavailable', 'server_busy'];

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
        // A connection on probation that has not authenticated is told why it is not served
        // (a refused credential, a route that takes none, no route at all), not what it asked.
        answerError(ctx, onProbation(ctx.req.socket) && !ctx.state.auth ? serverBusy() : err);
      }
      // Served once: it comes back when it can authenticate, or on a connection within the allowance.
      if (onProbation(ctx.req.socket)) ctx.set('Connection', 'close');
      if (!ctx.req.complete) closeUnreadBody(ctx);
      armWriteDeadline(ctx, writeIdleMs);
    } finally {
      logRequest(ctx, started);
    }
  };
}

/**
 * A request answered before its body was read (a 401, a 413, a bad shape, or a body sent to a route
 * that takes none) closes its connection once answered, instead of draining whatever the client
 * goes on sending, however slowly or however much: only a bounded part of it is read and dropped,
 * so that the client sees the answer (api/lingering-close.ts). Node reads what comes (the
 * parser's buffer, then the request's dump), in chunks no code of ours sees: counted when the
 * connection ends, so that a scavenge frees them. Uncounted, a flood of refused large bodies (the
 * abuse bench: about a thousand a second) piled them up until V8's external-memory limit started
 * a full collection, five a second, each pausing the loop for the neighbours.
 */
function closeUnreadBody(ctx: AppContext): void {
  ctx.set('Connection', 'close');
  const socket = ctx.req.socket as Socket | null;
  socket?.once('close', () => bytesMoved(socket.bytesRead));
}
