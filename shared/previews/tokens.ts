import { createHash, randomBytes } from 'node:crypto';

// Preview tokens are bearer secrets of 256 random bits. Only their SHA-256 digest is stored, and a
// token is found by its digest: what a guess learns from the lookup's timing is about a digest,
// never about a stored token.

const PREFIX = 'pvt_';
const SHAPE = /^pvt_[A-Za-z0-9_-]{43}$/;

export function newPreviewToken(): string {
  return `${PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The digest a token is stored and found by; undefined for a string that is no token's shape. */
export function previewTokenDigest(token: string | undefined): Buffer | undefined {
  if (!token || !SHAPE.test(token)) return undefined;
  return createHash('sha256').update(token).digest();
}
