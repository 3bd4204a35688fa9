import { createHmac, randomBytes } from 'node:crypto';

// Standard Webhooks (https://www.standardwebhooks.com): the secret is "whsec_" and the base64 of
// the signing key; the signature of a message is HMAC-SHA256 over "id.timestamp.body" in base64,
// sent as "v1,<signature>", several space-separated while two secrets are valid (a rotation).
export const SECRET_PREFIX = 'whsec_';
const KEY_BYTES = 32;

export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(KEY_BYTES).toString('base64')}`;
}

export function signingKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('not a webhook secret');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

export function signature(secret: string, msgId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', signingKey(secret)).update(`${msgId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers for one attempt; every secret given signs (rotation). */
export function signedHeaders(secrets: readonly string[], msgId: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signature(s, msgId, timestampSeconds, body)).join(' '),
  };
}
