import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { ApiError } from '../../shared/errors.ts';
import { isId, newId } from '../../shared/ids.ts';
import { recordEvent } from '../../shared/events/record.ts';
import type { RecordedEvent } from '../../shared/events/types.ts';
import { newWebhookSecret } from '../../shared/webhooks/signing.ts';
import { requireWebhookCipher, webhookSecretContext } from '../../shared/webhooks/secrets.ts';
import { checkWebhookUrl } from '../../shared/webhooks/url-policy.ts';
import type { AppDeps } from '../context.ts';

export interface WebhookRow {
  id: string;
  url: string;
  event_types: string[] | null;
  description: string | null;
  created_at: Date;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

export interface AttemptRow {
  event_id: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  created_at: Date;
  next_retry_at: Date | null;
}

const COLUMNS = 'id, url, event_types, description, created_at, disabled_at, disabled_reason';

export interface CreateWebhookInput {
  url: string;
  events?: string[];
  description?: string;
}

/** Checks the URL and the account's limit, then stores the endpoint with its secret encrypted. */
export async function createWebhook(deps: AppDeps, em: EntityManager, accountId: string, input: CreateWebhookInput) {
  const checked = checkWebhookUrl(input.url, deps.config.PADDOCK_WEBHOOK_ALLOW_LOCAL);
  if ('refused' in checked) throw new ApiError('webhook_url_not_allowed', `Webhooks may not be sent to this URL: ${checked.refused}.`);
  const cipher = requireWebhookCipher(deps.webhookCipher);
  const id = newId('wh');
  const secret = newWebhookSecret();
  const types = !input.events || input.events.includes('*') ? null : [...new Set(input.events)];
  const row = await em.transactional(async (tx) => {
    // One writer per account at a time, so the limit holds under concurrent requests.
    await tx.execute('select pg_advisory_xact_lock(hashtextextended(?, 20261123))', [`webhooks:${accountId}`]);
    // Between the account's events, which are recorded under its row's lock: an event recorded
    // before this endpoint commits is older than it (created_at is taken once the lock is held),
    // so it is no loss that the event was recorded with nowhere to go (shared/events/record.ts).
    await tx.execute('select 1 from accounts where id = ? for share', [accountId]);
    const [count] = await tx.execute<{ n: string }[]>('select count(*) as n from webhook_endpoints where account_id = ?', [accountId]);
    const max = deps.config.PADDOCK_WEBHOOK_MAX_PER_ACCOUNT;
    if (Number(count?.n ?? 0) >= max) throw new ApiError('webhook_limit_reached', `The account has ${max} webhook endpoints, the most it may; delete one first.`);
    const [inserted] = await tx.execute<WebhookRow[]>(
      `insert into webhook_endpoints (id, account_id, url, description, event_types, secret_ciphertext, created_at)
       values (?, ?, ?, ?, ?::jsonb, ?, clock_timestamp()) returning ${COLUMNS}`,
      [id, accountId, checked.target.url.href, input.description ?? null, types ? JSON.stringify(types) : null, cipher.encrypt(secret, webhookSecretContext(accountId, id, 'current'))],
    );
    return inserted!;
  });
  return { row, secret };
}

export async function listWebhooks(pool: Pool, accountId: string): Promise<WebhookRow[]> {
  const { rows } = await pool.query<WebhookRow>(`select ${COLUMNS} from webhook_endpoints where account_id = $1 order by created_at, id`, [accountId]);
  return rows;
}

/** The caller's endpoint, or 404 exactly as for one that does not exist. */
export async function findOwnWebhook(pool: Pool, accountId: string, id: string): Promise<WebhookRow> {
  if (!isId('wh', id)) throw new ApiError('webhook_not_found', `No webhook endpoint ${id}.`);
  const { rows } = await pool.query<WebhookRow>(`select ${COLUMNS} from webhook_endpoints where id = $1 and account_id = $2`, [id, accountId]);
  if (!rows[0]) throw new ApiError('webhook_not_found', `No webhook endpoint ${id}.`);
  return rows[0];
}

/** Removes the endpoint; its pending deliveries go with it (their jobs find nothing and end). */
export async function deleteWebhook(pool: Pool, accountId: string, id: string): Promise<void> {
  if (!isId('wh', id)) throw new ApiError('webhook_not_found', `No webhook endpoint ${id}.`);
  const { rowCount } = await pool.query('delete from webhook_endpoints where id = $1 and account_id = $2', [id, accountId]);
  if (!rowCount) throw new ApiError('webhook_not_found', `No webhook endpoint ${id}.`);
}

export async function listAttempts(pool: Pool, endpointId: string, limit: number): Promise<AttemptRow[]> {
  const { rows } = await pool.query<AttemptRow>(
    `select event_id, event_type, attempt, status_code, error, duration_ms, created_at, next_retry_at
       from webhook_attempts where endpoint_id = $1 order by id desc limit $2`,
    [endpointId, limit],
  );
  return rows;
}

/** Records a webhook.test event for this endpoint only (sent even while it is disabled). */
export async function recordTestEvent(em: EntityManager, accountId: string, endpointId: string): Promise<RecordedEvent> {
  const event = await em.transactional((tx) =>
    recordEvent(tx, { accountId, type: 'webhook.test', targetEndpointId: endpointId, data: { webhook: { id: endpointId } } }),
  );
  return event!;
}

/** A new secret; the current one becomes the previous, which also signs until the window ends. */
export async function rotateSecret(deps: AppDeps, em: EntityManager, accountId: string, endpointId: string) {
  const cipher = requireWebhookCipher(deps.webhookCipher);
  await findOwnWebhook(deps.pg, accountId, endpointId);
  const secret = newWebhookSecret();
  const until = new Date(Date.now() + deps.config.PADDOCK_WEBHOOK_SECRET_ROTATION_HOURS * 3600_000);
  await em.transactional(async (tx) => {
    const [row] = await tx.execute<{ secret_ciphertext: Buffer }[]>(
      'select secret_ciphertext from webhook_endpoints where id = ? and account_id = ? for update',
      [endpointId, accountId],
    );
    if (!row) throw new ApiError('webhook_not_found', `No webhook endpoint ${endpointId}.`);
    const current = cipher.decrypt(row.secret_ciphertext, webhookSecretContext(accountId, endpointId, 'current'));
    await tx.execute(
      `update webhook_endpoints set secret_ciphertext = ?, previous_secret_ciphertext = ?, previous_secret_expires_at = ? where id = ?`,
      [
        cipher.encrypt(secret, webhookSecretContext(accountId, endpointId, 'current')),
        cipher.encrypt(current, webhookSecretContext(accountId, endpointId, 'previous')),
        until,
        endpointId,
      ],
    );
  });
  return { id: endpointId, secret, previousSecretExpiresAt: until.toISOString() };
}
