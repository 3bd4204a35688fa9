import type { Next } from 'koa';
import { whenAnswerEnds } from './answer-end.ts';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import type { AppContext, AppDeps } from '../context.ts';
import type { InFlightKind } from '../ratelimit/in-flight.ts';
import type { LeaseTaken, LeaseToTake } from '../auth/api-key-store.ts';
import { PROCESS_OUTPUT_WAIT_MAX_SECONDS } from '../../shared/mcp/tools.ts';

// How long past its own limit a piece of work may hold its lease: answering a buffered result to
// a slow client, say. A lease a dead replica leaves expires then.
const LEASE_SLACK_MS = 120_000;

export const IN_FLIGHT_ERRORS: readonly ErrorCode[] = ['too_many_in_flight'];

/** The caps of a kind of work: per sandbox (where its requests name one) and per account. */
function limitsOf(kind: InFlightKind, deps: AppDeps): { sandbox?: number; account: number; ttlMs: number } {
  const { config } = deps;
  if (kind === 'mcp') {
    // A message lasts as long as its tool call: the longest command, start or wait it runs.
    const longest = Math.max(config.PADDOCK_EXEC_TIMEOUT_MAX_SECONDS, config.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS, PROCESS_OUTPUT_WAIT_MAX_SECONDS);
    return { account: config.PADDOCK_INFLIGHT_MCP_PER_ACCOUNT, ttlMs: longest * 1000 + LEASE_SLACK_MS };
  }
  if (kind === 'exec') {
    return {
      sandbox: config.PADDOCK_INFLIGHT_EXEC_PER_SANDBOX,
      account: config.PADDOCK_INFLIGHT_EXEC_PER_ACCOUNT,
      ttlMs: config.PADDOCK_EXEC_TIMEOUT_MAX_SECONDS * 1000 + LEASE_SLACK_MS,
    };
  }
  if (kind === 'archives') {
    // An archive streams for as long as its transfer lasts, up to the longest exec.
    return {
      sandbox: config.PADDOCK_INFLIGHT_FILES_PER_SANDBOX,
      account: config.PADDOCK_INFLIGHT_FILES_PER_ACCOUNT,
      ttlMs: config.PADDOCK_EXEC_TIMEOUT_MAX_SECONDS * 1000 + LEASE_SLACK_MS,
    };
  }
  if (kind === 'terminal') {
    // A terminal lives at most as long as its sandbox; the lease of one a dead replica held goes then.
    return {
      sandbox: config.PADDOCK_INFLIGHT_TERMINAL_PER_SANDBOX,
      account: config.PADDOCK_INFLIGHT_TERMINAL_PER_ACCOUNT,
      ttlMs: config.PADDOCK_SESSION_CAP_SECONDS * 1000 + LEASE_SLACK_MS,
    };
  }
  return { sandbox: config.PADDOCK_INFLIGHT_FILES_PER_SANDBOX, account: config.PADDOCK_INFLIGHT_FILES_PER_ACCOUNT, ttlMs: LEASE_SLACK_MS };
}

/** A route's in-flight cap, as its spec gives it. */
export interface InFlightSpec {
  kind: InFlightKind;
  leasedView?: (sandboxId: string) => string;
}

const sandboxIdOf = (ctx: AppContext) => String(ctx.params?.id ?? 'none').slice(0, 100);

/** The subjects of a lease of `kind` for the request, each key around the account's id. */
function subjectsOf(kind: InFlightKind, limits: ReturnType<typeof limitsOf>, sandboxId: string): { key: [string, string]; limit: number }[] {
  const account = { key: [`${kind}:acct:`, ''] as [string, string], limit: limits.account };
  return limits.sandbox === undefined ? [account] : [{ key: [`${kind}:sbx:`, `:${sandboxId}`], limit: limits.sandbox }, account];
}

/**
 * For a route: the lease the API key's lookup takes for a request with the route's token, in its
 * round trip (api/auth/api-key-store.ts), with the view the handler reads first; what becomes of
 * it once the account is known is keepLookupLease's.
 */
export function lookupLeases(spec: InFlightSpec, deps: AppDeps): (ctx: AppContext) => LeaseToTake {
  const limits = limitsOf(spec.kind, deps);
  const inflight = deps.inFlight.subjectKey('');
  return (ctx) => {
    const sandboxId = sandboxIdOf(ctx);
    const view = spec.leasedView && deps.views.enabled ? deps.views.keysAround(spec.leasedView(sandboxId)) : undefined;
    return {
      member: deps.inFlight.member(),
      ttlMs: limits.ttlMs,
      subjects: subjectsOf(spec.kind, limits, sandboxId).map((s) => ({ key: [inflight + s.key[0], s.key[1]], limit: s.limit })),
      read: view ? [view.generation, view.view] : [],
    };
  };
}

/**
 * A lease the lookup took: kept for the in-flight step when the request's body has all come
 * already (as it does with its head, for any client that is not trickling it), else given back at
 * once, the step taking it again once the body is whole: a trickled body holds no lease.
 */
export function keepLookupLease(ctx: AppContext, deps: AppDeps, lease: LeaseToTake, taken: LeaseTaken | undefined, accountId: string): void {
  if (!taken?.granted) return;
  const release = deps.inFlight.held(
    lease.subjects.map((s) => s.key[0] + accountId + s.key[1]),
    lease.member,
  );
  const drop = () => void release().catch(() => undefined);
  // A client gone while the lookup was asked: no close is left to come and give the lease back.
  if (!ctx.req.complete || ctx.req.socket.destroyed) return drop();
  ctx.state.lease = { release: whenAnswerEnds(ctx, drop), read: taken.read };
}

/**
 * Admission control: a cap on the requests of one kind in progress, per sandbox and per account,
 * on every replica together. The token buckets bound how often work starts; this bounds how much
 * of it runs at once (a long command holds its lease until its answer is sent or its client goes).
 * Taken here, or already by the API key's lookup (keepLookupLease).
 */
export function admitInFlight(spec: InFlightSpec, deps: AppDeps) {
  const { kind, leasedView } = spec;
  const limits = limitsOf(kind, deps);
  return async function admit(ctx: AppContext, next: Next): Promise<void> {
    // The view the handler reads first comes in the same round trip: one less before the work starts.
    const withView = leasedView !== undefined && ctx.state.auth !== undefined && deps.views.enabled;
    let held = ctx.state.lease;
    if (!held) {
      const accountId = ctx.state.auth?.accountId ?? 'none';
      const sandboxId = sandboxIdOf(ctx);
      const view = withView ? deps.views.keysOf(accountId, leasedView(sandboxId)) : undefined;
      const lease = await deps.inFlight.acquire({
        subjects: subjectsOf(kind, limits, sandboxId).map((s) => ({ key: s.key[0] + accountId + s.key[1], limit: s.limit })),
        ttlMs: limits.ttlMs,
        ...(view ? { read: [view.generation, view.view] } : {}),
      });
      if (!lease.granted) {
        const scope = limits.sandbox !== undefined && lease.subjectIndex === 0 ? 'sandbox' : 'account';
        const limit = scope === 'sandbox' ? limits.sandbox : limits.account;
        throw new ApiError('too_many_in_flight', `At most ${limit} ${kind} requests may be in progress per ${scope} at once; retry when one has finished.`, {
          headers: { 'Retry-After': String(lease.retryAfterSeconds) },
          extra: { kind, scope, limit },
        });
      }
      // Released once the whole answer is written, or its client has gone.
      held = { release: whenAnswerEnds(ctx, () => void lease.release().catch(() => undefined)), read: lease.read };
    }
    if (withView) ctx.state.leasedView = deps.views.readOf(held.read[0] ?? null, held.read[1] ?? null);
    // A client that left before this request was admitted has closed its socket already, and its
    // lease goes as soon as the handler returns.
    const socket = ctx.req.socket;
    try {
      await next();
    } finally {
      if (socket.destroyed) held.release();
    }
  };
}
