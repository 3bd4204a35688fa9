import type { Next } from 'koa';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import { onProbation } from '../connection-allowance.ts';
import type { AppContext } from '../context.ts';

// The connections past their address's allowance come back soonest from that address's others,
// which end within the headers or keep-alive timeout.
const RETRY_AFTER_SECONDS = 1;

export const PROBATION_ERRORS: readonly ErrorCode[] = ['server_busy'];

export function serverBusy(): ApiError {
  return new ApiError(
    'server_busy',
    'This address holds more connections than the server serves without credentials: send the request with your API key or session token, or retry shortly.',
    { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } },
  );
}

/** The first step of a route that takes no credential: a connection on probation is not served by it. */
export async function refuseOnProbation(ctx: AppContext, next: Next): Promise<void> {
  if (onProbation(ctx.req.socket)) throw serverBusy();
  await next();
}
