import { randomUUID } from 'node:crypto';
import type { AppContext } from '../context.ts';

const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a well-formed incoming X-Request-Id, else makes one, on every response. */
export function assignRequestId(ctx: AppContext): void {
  const incoming = ctx.get('x-request-id');
  ctx.state.requestId = WELL_FORMED.test(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
  ctx.res.setHeader('X-Request-Id', ctx.state.requestId);
}
