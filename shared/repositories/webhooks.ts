import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { execute } from '../db/placeholders.ts';
import type { EventType, RecordedEvent } from '../events/types.ts';
import { recordEvent } from './events.ts';

// The webhook aggregate's one way to the database: its endpoints, their deliveries (one per
// endpoint and event) and the attempts logged for them.

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

export interface NewEndpoint {
  id: string;
  accountId: string;
  url: string;
  description: string | null;
  /** null: every type. */
  eventTypes: string[] | null;
  secretCiphertext: Buffer;
}

/** The new secret of an endpoint, made from its current one's ciphertext. */
export interface SecretChange {
  current: Buffer;
  previous: Buffer;
  previousExpiresAt: Date;
}

/** An account's endpoints, as the API serves them: bound to a request's unit of work and the driver's pool. */
export interface WebhookStore {
  /** The endpoint stored, unless the account holds `max` already (then undefined, nothing stored). */
  insertWithinLimit(endpoint: NewEndpoint, max: number): Promise<WebhookRow | undefined>;
  list(accountId: string): Promise<WebhookRow[]>;
  findOwn(accountId: string, id: string): Promise<WebhookRow | undefined>;
  /** Whether there was such an endpoint; its pending deliveries go with it. */
  delete(accountId: string, id: string): Promise<boolean>;
  attempts(endpointId: string, limit: number): Promise<AttemptRow[]>;
  /** A webhook.test event for this endpoint only. */
  recordTest(accountId: string, endpointId: string): Promise<RecordedEvent>;
  /** Replaces the endpoint's secret under its row's lock; false when there is no such endpoint. */
  replaceSecret(accountId: string, endpointId: string, change: (currentCiphertext: Buffer) => SecretChange): Promise<boolean>;
}

export function webhookStore(em: EntityManager, pool: Pool): WebhookStore {
  return {
    insertWithinLimit: (endpoint, max) => insertWithinLimit(em, endpoint, max),
    list: async (accountId) => (await pool.query<WebhookRow>(`select ${COLUMNS} from webhook_endpoints where account_id = $1 order by created_at, id`, [accountId])).rows,
    findOwn: async (accountId, id) => (await pool.query<WebhookRow>(`select ${COLUMNS} from webhook_endpoints where id = $1 and account_id = $2`, [id, accountId])).rows[0],
    delete: async (accountId, id) => Boolean((await pool.query('delete from webhook_endpoints where id = $1 and account_id = $2', [id, accountId])).rowCount),
    attempts: async (endpointId, limit) =>
      (
        await pool.query<AttemptRow>(
          `select event_id, event_type, attempt, status_code, error, duration_ms, created_at, next_retry_at
             from webhook_attempts where endpoint_id = $1 order by id desc limit $2`,
          [endpointId, limit],
        )
      ).rows,
    recordTest: async (accountId, endpointId) =>
      (await em.transactional((tx) =>
        recordEvent(tx, { accountId, type: 'webhook.test', targetEndpointId: endpointId, data: { webhook: { id: endpointId } } }),
      ))!,
    replaceSecret: (accountId, endpointId, change) => replaceSecret(em, accountId, endpointId, change),
  };
}

async function insertWithinLimit(em: EntityManager, endpoint: NewEndpoint, max: number): Promise<WebhookRow | undefined> {
  return em.transactional(async (tx) => {
    // One writer per account at a time, so the limit holds under concurrent requests.
    await execute(tx, 'select pg_advisory_xact_lock(hashtextextended($1, 20261123))', [`webhooks:${endpoint.accountId}`]);
    // Between the account's events, which are recorded under its row's lock: an event recorded
    // before this endpoint commits is older than it (created_at is taken once the lock is held),
    // so it is no loss that the event was recorded with nowhere to go (repositories/events.ts).
    await execute(tx, 'select 1 from accounts where id = $1 for share', [endpoint.accountId]);
    const [count] = await execute<{ n: string }>(tx, 'select count(*) as n from webhook_endpoints where account_id = $1', [endpoint.accountId]);
    if (Number(count?.n ?? 0) >= max) return undefined;
    const [inserted] = await execute<WebhookRow>(
      tx,
      `insert into webhook_endpoints (id, account_id, url, description, event_types, secret_ciphertext, created_at)
       values ($1, $2, $3, $4, $5::jsonb, $6, clock_timestamp()) returning ${COLUMNS}`,
      [
        endpoint.id,
        endpoint.accountId,
        endpoint.url,
        endpoint.description,
        endpoint.eventTypes ? JSON.stringify(endpoint.eventTypes) : null,
        endpoint.secretCiphertext,
      ],
    );
    return inserted!;
  });
}

async function replaceSecret(em: EntityManager, accountId: string, endpointId: string, change: (currentCiphertext: Buffer) => SecretChange): Promise<boolean> {
  return em.transactional(async (tx) => {
    const [row] = await execute<{ secret_ciphertext: Buffer }>(
      tx,
      'select secret_ciphertext from webhook_endpoints where id = $1 and account_id = $2 for update',
      [endpointId, accountId],
    );
    if (!row) return false;
    const next = change(row.secret_ciphertext);
    await execute(tx, `update webhook_endpoints set secret_ciphertext = $1, previous_secret_ciphertext = $2, previous_secret_expires_at = $3 where id = $4`, [
      next.current,
      next.previous,
      next.previousExpiresAt,
      endpointId,
    ]);
    return true;
  });
}

// The dispatch: an event's deliveries, one per endpoint it goes to.

const DISPATCH_LOCK_CLASS = 7_361_004;

export interface PendingEvent {
  id: string;
  seq: string;
  sandbox_id: string | null;
  type: string;
  target_endpoint_id: string | null;
  created_at: Date;
}

export interface EndpointTargets {
  id: string;
  event_types: string[] | null;
  created_at: Date;
}

export interface DeliveryKey {
  endpoint_id: string;
  event_id: string;
}

/**
 * In one transaction, under a per-account lock: the deliveries of the event and of every earlier
 * undispatched event of its account (each to the endpoints `targetsOf` names), and those events
 * marked dispatched. Answers the deliveries new here (a delivery row exists once).
 */
export function dispatchEvents(em: EntityManager, eventId: string, targetsOf: (event: PendingEvent, endpoints: EndpointTargets[]) => string[]): Promise<DeliveryKey[]> {
  return em.transactional(async (tx) => {
    const [event] = await execute<{ seq: string; account_id: string }>(tx, 'select seq, account_id from events where id = $1', [eventId]);
    if (!event) return [];
    await execute(tx, 'select pg_advisory_xact_lock($1, hashtext($2))', [DISPATCH_LOCK_CLASS, event.account_id]);
    const pending = await execute<PendingEvent>(
      tx,
      `select id, seq, sandbox_id, type, target_endpoint_id, created_at from events
        where account_id = $1 and dispatched_at is null and seq <= $2 order by seq`,
      [event.account_id, event.seq],
    );
    if (pending.length === 0) return [];
    const endpoints = await execute<EndpointTargets>(
      tx,
      'select id, event_types, created_at from webhook_endpoints where account_id = $1 and disabled_at is null',
      [event.account_id],
    );
    const rows = pending.flatMap((e) => targetsOf(e, endpoints).map((endpointId) => [endpointId, e.id, e.sandbox_id, e.seq] as const));
    let inserted: DeliveryKey[] = [];
    if (rows.length > 0) {
      inserted = await execute<DeliveryKey>(
        tx,
        `insert into webhook_deliveries (endpoint_id, event_id, sandbox_id, event_seq)
         values ${rows.map((_, i) => `($${i * 4 + 1}, $${i * 4 + 2}, $${i * 4 + 3}, $${i * 4 + 4})`).join(', ')}
         on conflict do nothing returning endpoint_id, event_id`,
        rows.flat(),
      );
    }
    await execute(tx, `update events set dispatched_at = now() where id in (${pending.map((_, i) => `$${i + 1}`).join(', ')})`, pending.map((e) => e.id));
    return inserted;
  });
}

// The deliveries.

export interface DeliveryRow {
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: Date | null;
  sandbox_id: string | null;
  event_seq: string;
  account_id: string;
  url: string;
  disabled_at: Date | null;
  secret_ciphertext: Buffer;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_expires_at: Date | null;
  last_success_at: Date | null;
  event_type: EventType;
  event_data: Record<string, unknown>;
  event_created_at: Date;
  target_endpoint_id: string | null;
}

/** The delivery with its endpoint and its event, or undefined when it is gone (its endpoint deleted). */
export async function findDelivery(em: EntityManager, endpointId: string, eventId: string): Promise<DeliveryRow | undefined> {
  const [row] = await execute<DeliveryRow>(
    em,
    `select d.state, d.attempts, d.next_attempt_at, d.sandbox_id, d.event_seq, w.account_id, w.url, w.disabled_at, w.secret_ciphertext,
            w.previous_secret_ciphertext, w.previous_secret_expires_at, w.last_success_at,
            e.type as event_type, e.data as event_data, e.created_at as event_created_at, e.target_endpoint_id
       from webhook_deliveries d
       join webhook_endpoints w on w.id = d.endpoint_id
       join events e on e.id = d.event_id
      where d.endpoint_id = $1 and d.event_id = $2`,
    [endpointId, eventId],
  );
  return row;
}

/** The earliest pending delivery to the endpoint of an event of the sandbox before `eventSeq`: when it is due (its retry, else its creation), or undefined when there is none. */
export async function earlierPending(em: EntityManager, endpointId: string, sandboxId: string, eventSeq: string): Promise<{ due_at: Date } | undefined> {
  const [earlier] = await execute<{ due_at: Date }>(
    em,
    `select coalesce(next_attempt_at, created_at) as due_at from webhook_deliveries
      where endpoint_id = $1 and sandbox_id = $2 and state = 'pending' and event_seq < $3
      order by event_seq limit 1`,
    [endpointId, sandboxId, eventSeq],
  );
  return earlier;
}

export interface AttemptRecord {
  endpointId: string;
  eventId: string;
  eventType: EventType;
  /** The account of the endpoint: a webhook.disabled event is its. */
  accountId: string;
  eventCreatedAt: Date;
  attempt: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** When the attempt was made: its next retry is counted from it. */
  at: Date;
  nextAttemptAt: Date | null;
  state: 'pending' | 'delivered' | 'failed';
  ok: boolean;
  /** A webhook.test delivery: answered, it re-enables its endpoint; failed, it never disables it. */
  isTest: boolean;
}

/**
 * Logs the attempt and moves the delivery and its endpoint on, in one transaction. A failure that
 * ends the delivery (state failed) when the endpoint has not answered since the event: the endpoint
 * is disabled, and the webhook.disabled event recorded with it is answered.
 */
export function recordAttempt(em: EntityManager, a: AttemptRecord): Promise<RecordedEvent | undefined> {
  return em.transactional(async (tx) => {
    await execute(
      tx,
      `insert into webhook_attempts (endpoint_id, event_id, event_type, attempt, status_code, error, duration_ms, next_retry_at, created_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [a.endpointId, a.eventId, a.eventType, a.attempt, a.statusCode, a.error, a.durationMs, a.nextAttemptAt, a.at],
    );
    await execute(
      tx,
      `update webhook_deliveries set attempts = $1, state = $2, next_attempt_at = $3, finished_at = case when $2 = 'pending' then null else now() end
        where endpoint_id = $4 and event_id = $5`,
      [a.attempt, a.state, a.nextAttemptAt, a.endpointId, a.eventId],
    );
    return a.ok ? markAnswered(tx, a) : markFailing(tx, a);
  });
}

async function markAnswered(tx: EntityManager, a: AttemptRecord): Promise<undefined> {
  await execute(
    tx,
    `update webhook_endpoints set last_success_at = now(), failing_since = null,
            disabled_at = case when $1 then null else disabled_at end,
            disabled_reason = case when $1 then null else disabled_reason end
      where id = $2`,
    [a.isTest, a.endpointId],
  );
  return undefined;
}

async function markFailing(tx: EntityManager, a: AttemptRecord): Promise<RecordedEvent | undefined> {
  await execute(tx, 'update webhook_endpoints set failing_since = coalesce(failing_since, now()) where id = $1', [a.endpointId]);
  if (a.state !== 'failed' || a.isTest) return undefined;
  const [endpoint] = await execute<{ id: string; url: string; disabled_at: Date }>(
    tx,
    `update webhook_endpoints set disabled_at = now(), disabled_reason = 'failed for the whole retry window'
      where id = $1 and disabled_at is null and (last_success_at is null or last_success_at < $2)
      returning id, url, disabled_at`,
    [a.endpointId, a.eventCreatedAt],
  );
  if (!endpoint) return undefined;
  return recordEvent(tx, {
    accountId: a.accountId,
    type: 'webhook.disabled',
    data: { webhook: { id: endpoint.id, url: endpoint.url, disabledAt: new Date(endpoint.disabled_at).toISOString(), lastEventId: a.eventId } },
  });
}

/** Ends a pending delivery unattempted. */
export async function finishDelivery(em: EntityManager, endpointId: string, eventId: string, state: 'failed'): Promise<void> {
  await execute(em, `update webhook_deliveries set state = $1, finished_at = now(), next_attempt_at = null where endpoint_id = $2 and event_id = $3 and state = 'pending'`, [
    state,
    endpointId,
    eventId,
  ]);
}

/** Pending deliveries whose next attempt is more than `seconds` behind: their jobs were lost. */
export async function stalledDeliveries(em: EntityManager, seconds: number, limit: number): Promise<DeliveryKey[]> {
  return execute<DeliveryKey>(
    em,
    `select endpoint_id, event_id from webhook_deliveries
      where state = 'pending' and coalesce(next_attempt_at, created_at) < now() - make_interval(secs => $1) limit $2`,
    [seconds, limit],
  );
}

/** Deliveries that failed at least once and will be tried again. */
export async function countRetriesPending(em: EntityManager): Promise<number> {
  const [row] = await execute<{ n: string }>(em, "select count(*) as n from webhook_deliveries where state = 'pending' and attempts > 0");
  return Number(row?.n ?? 0);
}

/** Endpoints disabled after failing for the whole retry window. */
export async function countDisabledEndpoints(em: EntityManager): Promise<number> {
  const [row] = await execute<{ n: string }>(em, 'select count(*) as n from webhook_endpoints where disabled_at is not null');
  return Number(row?.n ?? 0);
}
