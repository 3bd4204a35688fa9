import { ApiError } from '../errors.ts';
import { SecretCipher } from '../secrets/cipher.ts';
import type { Config } from '../config.ts';

// Webhook signing secrets are stored encrypted (AES-256-GCM, shared/secrets/cipher.ts) under
// PADDOCK_WEBHOOK_SECRETS_KEY: a key of their own, held by the web (which encrypts a new secret)
// and the worker (which signs), so a worker never holds the key to the sandbox secrets.

export function webhookCipher(config: Config): SecretCipher | undefined {
  return config.PADDOCK_WEBHOOK_SECRETS_KEY ? new SecretCipher(config.PADDOCK_WEBHOOK_SECRETS_KEY) : undefined;
}

export function requireWebhookCipher(cipher: SecretCipher | undefined): SecretCipher {
  if (!cipher) throw new ApiError('service_unavailable', 'Webhooks are not configured on this server (PADDOCK_WEBHOOK_SECRETS_KEY).');
  return cipher;
}

/** Binds a ciphertext to its endpoint and slot, so it cannot be copied to another row. */
export function webhookSecretContext(accountId: string, endpointId: string, slot: 'current' | 'previous'): string {
  return `webhook\u0000${accountId}\u0000${endpointId}\u0000${slot}`;
}
