import type { Next } from 'koa';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import { hashApiKey, isWellFormedApiKey, looksLikeApiKey } from '../auth/api-key-format.ts';
import { looksLikeJwt } from '../auth/jwt.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { insufficientScope, type Scope } from '../../shared/scopes.ts';
import type { BucketToTake } from '../auth/api-key-store.ts';
import type { BucketName } from '../ratelimit/buckets.ts';
import { bucketLimit } from './rate-limit.ts';
import { keepLookupLease, lookupLeases, type InFlightSpec } from './in-flight.ts';
import { proveConnection } from '../connection-allowance.ts';
import { finishKeySession, holdKeySession, startKeySession } from './key-session.ts';
import type { OpenedSession } from '../auth/key-sessions.ts';

const BEARER = /^Bearer +([^\s]+) *$/i;

/**
 * What authenticate and authenticateWebSocket answer: no credential, several or both kinds sent,
 * one refused, one of the other kind, or one whose account has no room for another connection.
 */
export const AUTHENTICATION_ERRORS: readonly ErrorCode[] = ['missing_credential', 'invalid_request', 'invalid_credential', 'wrong_credential_type', 'too_many_in_flight'];
export const SCOPE_ERRORS: readonly ErrorCode[] = ['insufficient_scope'];

/**
 * The two credentials are never interchangeable: each route takes exactly one kind, and a valid
 * credential of the other kind answers wrong_credential_type so the client knows what to send.
 */
export function authenticate(kind: 'dashboard' | 'apiKey', deps: AppDeps, route: { bucket?: BucketName; scope?: Scope; lease?: InFlightSpec } = {}) {
  // An API key's lookup takes the route's account-bucket token in the same Redis round trip;
  // rateLimit then only reads what it took. A key without the route's scope spends none.
  const take: BucketToTake | undefined =
    kind === 'apiKey' && route.bucket && route.bucket !== 'auth'
      ? { keyPrefix: deps.buckets.accountKeyPrefix(route.bucket), perMinute: bucketLimit(route.bucket, deps), scope: route.scope }
      : undefined;
  const leaseFor = take && route.lease ? lookupLeases(route.lease, deps) : undefined;
  return async function authenticateRequest(ctx: AppContext, next: Next): Promise<void> {
    const header = ctx.get('authorization');
    if (!header) throw new ApiError('missing_credential', 'Send the credential as "Authorization: Bearer <credential>".');
    // Node keeps the first of several Authorization headers and drops the rest without a word: which
    // credential a request meant is then a guess, and is refused rather than taken.
    if ((ctx.req.headersDistinct.authorization?.length ?? 0) > 1) throw new ApiError('invalid_request', 'Send one Authorization header.');
    const token = BEARER.exec(header)?.[1];
    if (!token) throw new ApiError('invalid_credential', 'The Authorization header must be "Bearer <credential>".');

    if (kind === 'apiKey') {
      if (looksLikeApiKey(token)) {
        if (!isWellFormedApiKey(token)) throw invalid();
        const keyHash = hashApiKey(token);
        // Registered before the lookup is sent (auth/key-sessions.ts).
        const opened = deps.keySessions.open(keyHash);
        const holder = opened.holder(deps.keySessions.holder);
        const sentAt = performance.now();
        // With the token, the route's in-flight lease (middleware/in-flight.ts).
        const lease = leaseFor?.(ctx);
        let identity;
        try {
          identity = await deps.apiKeys.authenticate(() => ctx.state.em, keyHash, take, holder, lease);
        } catch (err) {
          opened.release();
          throw err;
        }
        if (identity && lease) keepLookupLease(ctx, deps, lease, identity.lease, identity.accountId);
        if (!identity) throw refused(opened);
        const session = admitted(opened, identity, sentAt, holder !== undefined);
        ctx.state.auth = { kind: 'apiKey', accountId: identity.accountId, keyId: identity.keyId, scopes: identity.scopes, keyHash };
        admitConnection(ctx, identity.accountId, session);
        if (identity.token && route.bucket) ctx.state.token = { bucket: route.bucket, result: identity.token };
        if (!session) return next();
        // As holdKeySession, inline: the most common path of all gets no frame more.
        startKeySession(ctx, session);
        let failure: { err: unknown } | undefined;
        try {
          await next();
        } catch (err) {
          failure = { err };
        }
        const finished = finishKeySession(ctx, session, failure);
        if (finished) await finished;
        return;
      } else if (looksLikeJwt(token) && deps.tokens.verify(token)) {
        throw new ApiError('wrong_credential_type', 'This route takes an API key, not a dashboard session token.');
      } else {
        throw invalid();
      }
    } else {
      if (looksLikeJwt(token)) {
        const claims = deps.tokens.verify(token);
        if (!claims) throw invalid();
        ctx.state.auth = { kind: 'dashboard', accountId: claims.accountId };
        admitConnection(ctx, claims.accountId);
      } else if (looksLikeApiKey(token) && isWellFormedApiKey(token)) {
        throw new ApiError(
          'wrong_credential_type',
          'This route takes a dashboard session token (from login), not an API key.',
        );
      } else {
        throw invalid();
      }
    }
    await next();
  };
}

/**
 * A WebSocket route: the key header as everywhere, or a terminal ticket (`?ticket=`) for clients
 * that cannot set headers. A ticket is redeemed (and so spent) whatever follows; it stands for the
 * key that asked for it, which must still be valid, and for its one sandbox only.
 */
export function authenticateWebSocket(deps: AppDeps) {
  const byHeader = authenticate('apiKey', deps);
  return async function authenticateUpgrade(ctx: AppContext, next: Next): Promise<void> {
    const ticket = ctx.query.ticket;
    if (ticket === undefined) return byHeader(ctx, next);
    if (ctx.get('authorization')) throw new ApiError('invalid_request', 'Send either the Authorization header or a ticket, not both.');
    const grant = typeof ticket === 'string' ? await deps.terminalTickets.redeem(ticket) : undefined;
    if (!grant) throw new ApiError('invalid_credential', 'The ticket is malformed, unknown, used or expired; tickets are single use and last 60 s.');
    const opened = deps.keySessions.open(grant.keyHash);
    const holder = opened.holder(deps.keySessions.holder);
    const sentAt = performance.now();
    let identity;
    try {
      identity = await deps.apiKeys.authenticate(() => ctx.state.em, grant.keyHash, undefined, holder);
    } catch (err) {
      opened.release();
      throw err;
    }
    if (!identity) throw refused(opened);
    const session = admitted(opened, identity, sentAt, holder !== undefined);
    if (identity.keyId !== grant.keyId || grant.sandboxId !== ctx.params.id) {
      session?.release();
      if (identity.keyId !== grant.keyId) throw invalid();
      throw new ApiError('invalid_credential', 'The ticket was issued for another sandbox.');
    }
    ctx.state.auth = { kind: 'apiKey', accountId: identity.accountId, keyId: identity.keyId, scopes: identity.scopes, keyHash: grant.keyHash };
    admitConnection(ctx, identity.accountId, session);
    return session ? holdKeySession(ctx, session, next) : next();
  };
}

/**
 * The request, registered as one of the key's open requests before its lookup was sent
 * (auth/key-sessions.ts), once the lookup has answered: refused with the key, or kept; none when
 * the lookup answered from memory, which happens only for a refusal (the route's bucket is empty).
 */
function admitted(session: OpenedSession, identity: { checked?: boolean }, sentAt: number, marked: boolean): OpenedSession | undefined {
  if (session.revoked) throw refused(session);
  if (!identity.checked) {
    session.release();
    return undefined;
  }
  session.confirmed(sentAt, marked);
  return session;
}

/**
 * The connection counts against the account now, not its address (api/connection-allowance.ts),
 * if the account has room for one more; a refusal is no open request of the key. Called once
 * `ctx.state.auth` is set: a refusal on a connection on probation is the account's own limit
 * (429), not the stranger's 503.
 */
function admitConnection(ctx: AppContext, accountId: string, session?: OpenedSession): void {
  const limit = proveConnection(ctx.req.socket, accountId);
  if (limit === undefined) return;
  session?.release();
  throw new ApiError('too_many_in_flight', `At most ${limit} connections per account may be open at once; reuse one, or retry when one has closed.`, {
    headers: { 'Retry-After': '1' },
    extra: { kind: 'connections', scope: 'account', limit },
  });
}

/** The lookup found no valid key: the request is no open request of it. */
function refused(session: OpenedSession): ApiError {
  session.release();
  return invalid();
}

function invalid(): ApiError {
  return new ApiError('invalid_credential', 'The credential is malformed, unknown, expired or revoked.');
}

/** A key whose scopes lack the route's answers 403 insufficient_scope naming it; nothing else runs. */
export function requireScope(scope: Scope) {
  return async function checkScope(ctx: AppContext, next: Next): Promise<void> {
    requireScopeFor(ctx, scope, 'this route');
    await next();
  };
}

/** Whether the request may do what `scope` allows: a key with it, or a signed-in user. */
export function hasScope(ctx: AppContext, scope: Scope): boolean {
  const auth = ctx.state.auth;
  return auth?.kind !== 'apiKey' || auth.scopes.includes(scope);
}

/** 403 insufficient_scope for a key without `scope`, which `what` (a route, or a field of its body) needs. */
export function requireScopeFor(ctx: AppContext, scope: Scope, what: string): void {
  if (!hasScope(ctx, scope)) throw insufficientScope(scope, what);
}
