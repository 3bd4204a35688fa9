import { ApiError, problemDocument, type ErrorCode } from '../../shared/errors.ts';
import { isDependencyUnavailable } from '../../shared/unavailable.ts';
import type { Logger } from '../../shared/logger.ts';
import type { AppContext } from '../context.ts';

const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;

/**
 * The database's refusals that are answers, by the constraint that refused (migrations/ names
 * them): an email already taken, or a key made for an account that is gone (a session token can
 * outlive its account, and is then a credential for nothing). Any other refusal is a fault.
 */
const CONSTRAINT_ERRORS: Record<string, ErrorCode> = {
  accounts_email_key: 'email_taken',
  api_keys_account_id_fkey: 'invalid_credential',
};
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

/** What the router leaves bare (no route matched, or one matched with another method), as errors. */
export function refuseUnrouted(ctx: AppContext): void {
  if (ctx.body != null) return;
  if (ctx.status === 404) throw new ApiError('not_found', `No route ${ctx.method} ${ctx.path}`);
  if (ctx.status === 405 || ctx.status === 501) {
    throw new ApiError('method_not_allowed', `${ctx.path} does not allow ${ctx.method}; allowed: ${ctx.response.get('Allow')}`);
  }
}

/** The one place errors become responses: RFC 9457 documents, never internals. */
export function errorAnswerer(log: Logger): (ctx: AppContext, err: unknown) => void {
  return function answerError(ctx, err) {
    const apiError = clientWentAway(ctx, err) ?? toApiError(err);
    if (apiError.code === 'internal_error') {
      log.error({ err, requestId: ctx.state.requestId, accountId: ctx.state.auth?.accountId }, 'unhandled error');
    } else if (apiError.code === 'service_unavailable') {
      log.warn({ err: errorSummary(err), requestId: ctx.state.requestId }, 'dependency unavailable');
    }
    ctx.status = apiError.status;
    ctx.set(apiError.headers);
    // Every 503 says when to come back, whichever part of the code raised it.
    if (apiError.code === 'service_unavailable' && !ctx.response.get('Retry-After')) {
      ctx.set('Retry-After', String(RETRY_AFTER_UNAVAILABLE_SECONDS));
    }
    ctx.type = 'application/problem+json';
    ctx.body = problemDocument(apiError, ctx.state.requestId);
  };
}

/**
 * A client that closed its connection in the middle of its request's body: the read fails with
 * ECONNRESET, which is not a backing service's, and counts as no 5xx of the service's (any tenant
 * could otherwise raise its error rate, and the alerts on it, at will).
 */
function clientWentAway(ctx: AppContext, err: unknown): ApiError | undefined {
  if (err instanceof ApiError || ctx.req.complete || !ctx.req.destroyed) return undefined;
  return new ApiError('invalid_request', 'The connection closed before the request was read whole.');
}

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const refused = constraintRefusal(err);
  if (refused) return new ApiError(refused);
  if (isDependencyUnavailable(err)) {
    return new ApiError('service_unavailable', 'A backing service is unreachable; try again shortly.');
  }
  // Errors raised by Koa itself while reading the request (aborted uploads, bad encodings).
  const status = (err as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: unknown }).expose) {
    if (status === 413) return new ApiError('payload_too_large');
    if (status === 415) return new ApiError('unsupported_media_type');
    if (status === 405) return new ApiError('method_not_allowed');
    if (status === 404) return new ApiError('not_found');
    return new ApiError('invalid_request', 'The request could not be read');
  }
  return new ApiError('internal_error', 'An unexpected error occurred; quote the request id when reporting it.');
}

/** The driver's error, or the ORM's around it (which copies its fields), for a constraint of CONSTRAINT_ERRORS. */
function constraintRefusal(err: unknown): ErrorCode | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, constraint } = err as { code?: unknown; constraint?: unknown };
  if ((code !== UNIQUE_VIOLATION && code !== FOREIGN_KEY_VIOLATION) || typeof constraint !== 'string') return undefined;
  return Object.hasOwn(CONSTRAINT_ERRORS, constraint) ? CONSTRAINT_ERRORS[constraint] : undefined;
}

function errorSummary(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
