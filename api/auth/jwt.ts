import jwt from 'jsonwebtoken';

const ALGORITHM = 'HS256';
const ISSUER = 'paddock';
const AUDIENCE = 'paddock-dashboard';
const TOKEN_TYPE = 'dashboard';

export interface DashboardClaims {
  accountId: string;
}

export interface DashboardTokens {
  issue(accountId: string): { token: string; expiresAt: Date };
  /** The claims of a valid dashboard token, or undefined for anything else. */
  verify(token: string): DashboardClaims | undefined;
}

/**
 * Tokens are signed with `secret` only. While it is being rotated, tokens signed with one of
 * `previousSecrets` are still accepted (for one TTL, until they have all expired).
 */
export function createDashboardTokens(secret: string, ttlSeconds: number, previousSecrets: readonly string[] = []): DashboardTokens {
  const accepted = [secret, ...previousSecrets];
  return {
    issue(accountId) {
      const now = Math.floor(Date.now() / 1000);
      const token = jwt.sign({ typ: TOKEN_TYPE, iat: now, nbf: now }, secret, {
        algorithm: ALGORITHM,
        issuer: ISSUER,
        audience: AUDIENCE,
        subject: accountId,
        expiresIn: ttlSeconds,
      });
      return { token, expiresAt: new Date((now + ttlSeconds) * 1000) };
    },
    verify(token) {
      for (const key of accepted) {
        const claims = verifyWith(token, key);
        if (claims) return claims;
      }
      return undefined;
    },
  };
}

function verifyWith(token: string, secret: string): DashboardClaims | undefined {
  try {
    // The algorithm is pinned: `none` and RS/HS confusion are refused before any claim is read.
    const claims = jwt.verify(token, secret, {
      algorithms: [ALGORITHM],
      issuer: ISSUER,
      audience: AUDIENCE,
      complete: false,
    });
    // A token without an expiry would be a credential forever: jsonwebtoken accepts one, we do not.
    if (typeof claims !== 'object' || claims.typ !== TOKEN_TYPE || typeof claims.sub !== 'string' || typeof claims.exp !== 'number') {
      return undefined;
    }
    return { accountId: claims.sub };
  } catch {
    return undefined;
  }
}

/** Three base64url segments: what any JWT looks like, valid or not. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}
