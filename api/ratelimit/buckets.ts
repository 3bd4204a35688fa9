/**
 * The token buckets a route may draw from (its spec's `bucket`): each has its own rate per minute
 * (api/middleware/rate-limit.ts), per account, or per client address for the unauthenticated auth routes.
 */
export type BucketName = 'auth' | 'sandbox_ops' | 'sandbox_lifecycle' | 'account';
