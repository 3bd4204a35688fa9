import type { Next } from 'koa';
import { ApiError } from '../../shared/errors.ts';
import { hashApiKey, isWellFormedApiKey, looksLikeApiKey } from '../auth/api-key-format.ts';
import { looksLikeJwt } from '../auth/jwt.ts';
import type { AppContext, AppDeps } from '../context.ts';

const BEARER = /^Bearer +([^\s]+) *$/i;

/**
 * The two credentials are never interchangeable: each route takes exactly one kind, and a valid
 * credential of the other kind answers wrong_credential_type so the client knows what to send.
 */
export function authenticate(kind: 'dashboard' | 'apiKey', deps: AppDeps) {
  return async function authenticateRequest(ctx: AppContext, next: Next): Promise<void> {
    const header = ctx.get('authorization');
    if (!header) throw new ApiError('missing_credential', 'Send the credential as "Authorization: Bearer <credential>".');
    const token = BEARER.exec(header)?.[1];
    if (!token) throw new ApiError('invalid_credential', 'The Authorization header must be "Bearer <credential>".');

    if (kind === 'apiKey') {
      if (looksLikeApiKey(token)) {
        if (!isWellFormedApiKey(token)) throw invalid();
        const identity = await deps.apiKeys.authenticate(ctx.state.em, hashApiKey(token));
        if (!identity) throw invalid();
        ctx.state.auth = { kind: 'apiKey', accountId: identity.accountId, keyId: identity.keyId };
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

function invalid(): ApiError {
  return new ApiError('invalid_credential', 'The credential is malformed, unknown, expired or revoked.');
}
