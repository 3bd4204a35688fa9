import type { Next } from 'koa';
import { whenAnswerEnds } from './answer-end.ts';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import type { AppContext, AppDeps } from '../context.ts';
import type { InFlightKind } from '../ratelimit/in-flight.ts';
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

/**
 * Admission control: a cap on the requests of one kind in progress, per sandbox and per account,
 * on every replica together. The token buckets bound how often work starts; this bounds how much
 * of it runs at once (a long command holds its lease until its answer is sent or its client goes).
 */
export function admitInFlight(kind: InFlightKind, deps: AppDeps, leasedView?: (sandboxId: string) => string) {
  const limits = limitsOf(kind, deps);
  return async function admit(ctx: AppContext, next: Next): Promise<void> {
    const accountId = ctx.state.auth?.accountId ?? 'none';
    const sandboxId = String(ctx.params?.id ?? 'none').slice(0, 100);
    const account = { key: `${kind}:acct:${accountId}`, limit: limits.account };
    // The view the handler reads first comes in the same round trip: one less before the work starts.
    const view = leasedView && ctx.state.auth && deps.views.enabled ? deps.views.keysOf(accountId, leasedView(sandboxId)) : undefined;
    const lease = await deps.inFlight.acquire({
      subjects: limits.sandbox === undefined ? [account] : [{ key: `${kind}:sbx:${accountId}:${sandboxId}`, limit: limits.sandbox }, account],
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
    if (view) ctx.state.leasedView = deps.views.readOf(lease.read[0] ?? null, lease.read[1] ?? null);
    // Released once the whole answer is written, or its client has gone; a client that left
    // before this request was admitted has closed its socket already, and its lease goes as soon
    // as the handler returns.
    const socket = ctx.req.socket;
    const release = whenAnswerEnds(ctx, () => void lease.release().catch(() => undefined));
    try {
      await next();
    } finally {
      if (socket.destroyed) release();
    }
  };
}
