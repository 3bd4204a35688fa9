import type { Next } from 'koa';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import { isDependencyUnavailable } from '../../shared/unavailable.ts';
import type { AppContext, AppDeps } from '../context.ts';
import type { BucketName } from '../ratelimit/buckets.ts';

export const RATE_LIMIT_ERRORS: readonly ErrorCode[] = ['rate_limited'];

export function bucketLimit(bucket: BucketName, deps: AppDeps): number {
  const { config } = deps;
  switch (bucket) {
    case 'auth':
      return config.PADDOCK_RATE_AUTH_PER_MIN;
    case 'sandbox_ops':
      return config.PADDOCK_RATE_SANDBOX_OPS_PER_MIN;
    case 'sandbox_lifecycle':
      return config.PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN;
    case 'account':
      return config.PADDOCK_RATE_ACCOUNT_PER_MIN;
  }
}

/**
 * Token buckets keyed on the account (per client IP for the unauthenticated auth routes), so
 * accounts behind one egress IP never share a bucket.
 */
export function rateLimit(bucket: BucketName, deps: AppDeps) {
  const perMinute = bucketLimit(bucket, deps);
  return async function limitRate(ctx: AppContext, next: Next): Promise<void> {
    const subject = bucket === 'auth' ? `ip:${ctx.ip}` : `acct:${ctx.state.auth?.accountId ?? 'none'}`;
    let result = ctx.state.token?.bucket === bucket ? ctx.state.token.result : undefined;
    try {
      result ??= await deps.buckets.take(bucket, subject, perMinute);
    } catch (err) {
      // The account bucket guards cheap PostgreSQL-only routes (keys, secrets, allowlist): they
      // keep working through a Redis outage, as they did before they had a bucket. The
      // other buckets guard work that needs Redis anyway, and logins must not go unthrottled.
      if (bucket === 'account' && isDependencyUnavailable(err)) {
        await next();
        return;
      }
      throw err;
    }
    ctx.res.setHeader('X-RateLimit-Limit', String(result.limit));
    ctx.res.setHeader('X-RateLimit-Remaining', String(result.remaining));
    if (!result.allowed) {
      deps.metrics.rateLimited.inc({ bucket });
      throw new ApiError(
        'rate_limited',
        `The ${bucket} rate limit of ${perMinute} requests per minute is used up; retry in ${result.retryAfterSeconds} s.`,
        { headers: { 'Retry-After': String(result.retryAfterSeconds) }, extra: { bucket } },
      );
    }
    await next();
  };
}
