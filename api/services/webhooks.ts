import { ApiError } from '../../shared/errors.ts';
import type { Config } from '../../shared/config.ts';
import { isId, newId } from '../../shared/ids.ts';
import type { RecordedEvent } from '../../shared/events/types.ts';
import type { WebhookRow, WebhookStore } from '../../shared/repositories/webhooks.ts';
import type { SecretCipher } from '../../shared/secrets/cipher.ts';
import { newWebhookSecret } from '../../shared/webhooks/signing.ts';
import { requireWebhookCipher, webhookSecretContext } from '../../shared/webhooks/secrets.ts';
import { checkWebhookUrl } from '../../shared/webhooks/url-policy.ts';
import type { z } from 'zod';
import type { CreateWebhookBody } from '../routes/webhooks/schema.ts';

/** What the webhook routes' rules need beyond the store: the operator's settings and the signing secrets' cipher. */
export interface WebhookOptions {
  config: Pick<Config, 'PADDOCK_WEBHOOK_ALLOW_LOCAL' | 'PADDOCK_WEBHOOK_MAX_PER_ACCOUNT' | 'PADDOCK_WEBHOOK_SECRET_ROTATION_HOURS'>;
  /** Absent when PADDOCK_WEBHOOK_SECRETS_KEY is not set: creating or rotating answers 503. */
  cipher: SecretCipher | undefined;
}

/** A create request's body, as its route has validated it. */
export type CreateWebhookInput = z.output<typeof CreateWebhookBody>;

/** Checks the URL and the account's limit, then stores the endpoint with its secret encrypted. */
export async function createWebhook(options: WebhookOptions, store: WebhookStore, accountId: string, input: CreateWebhookInput) {
  const checked = checkWebhookUrl(input.url, options.config.PADDOCK_WEBHOOK_ALLOW_LOCAL);
  if ('refused' in checked) throw new ApiError('webhook_url_not_allowed', `Webhooks may not be sent to this URL: ${checked.refused}.`);
  const cipher = requireWebhookCipher(options.cipher);
  const id = newId('wh');
  const secret = newWebhookSecret();
  const max = options.config.PADDOCK_WEBHOOK_MAX_PER_ACCOUNT;
  const row = await store.insertWithinLimit(
    {
      id,
      accountId,
      url: checked.target.url.href,
      description: input.description ?? null,
      eventTypes: !input.events || input.events.includes('*') ? null : [...new Set(input.events)],
      secretCiphertext: cipher.encrypt(secret, webhookSecretContext(accountId, id, 'current')),
    },
    max,
  );
  if (!row) throw new ApiError('webhook_limit_reached', `The account has ${max} webhook endpoints, the most it may; delete one first.`);
  return { row, secret };
}

/** The caller's endpoint, or 404 exactly as for one that does not exist. */
export async function findOwnWebhook(store: WebhookStore, accountId: string, id: string): Promise<WebhookRow> {
  const row = isId('wh', id) ? await store.findOwn(accountId, id) : undefined;
  if (!row) throw new ApiError('webhook_not_found', `No webhook endpoint ${id}.`);
  return row;
}

/** Removes the endpoint; its pending deliveries go with it (their jobs find nothing and end). */
export async function deleteWebhook(store: WebhookStore, accountId: string, id: string): Promise<void> {
  if (!isId('wh', id) || !(await store.delete(accountId, id))) throw new ApiError('webhook_not_found', `No webhook endpoint ${id}.`);
}

/** Records a webhook.test event for this endpoint only (sent even while it is disabled). */
export async function recordTestEvent(store: WebhookStore, accountId: string, endpointId: string): Promise<RecordedEvent> {
  return store.recordTest(accountId, endpointId);
}

/** A new secret; the current one becomes the previous, which also signs until the window ends. */
export async function rotateSecret(options: WebhookOptions, store: WebhookStore, accountId: string, endpointId: string) {
  const cipher = requireWebhookCipher(options.cipher);
  await findOwnWebhook(store, accountId, endpointId);
  const secret = newWebhookSecret();
  const until = new Date(Date.now() + options.config.PADDOCK_WEBHOOK_SECRET_ROTATION_HOURS * 3600_000);
  const replaced = await store.replaceSecret(accountId, endpointId, (currentCiphertext) => ({
    current: cipher.encrypt(secret, webhookSecretContext(accountId, endpointId, 'current')),
    previous: cipher.encrypt(cipher.decrypt(currentCiphertext, webhookSecretContext(accountId, endpointId, 'current')), webhookSecretContext(accountId, endpointId, 'previous')),
    previousExpiresAt: until,
  }));
  if (!replaced) throw new ApiError('webhook_not_found', `No webhook endpoint ${endpointId}.`);
  return { id: endpointId, secret, previousSecretExpiresAt: until.toISOString() };
}
