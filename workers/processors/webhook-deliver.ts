import { DelayedError, type Job } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import { parseWebhookPayload } from '../../shared/jobs/webhooks.ts';
import { presentEvent, type EventType } from '../../shared/events/types.ts';
import { recordEvent } from '../../shared/events/record.ts';
import { retryDelayMs } from '../../shared/webhooks/backoff.ts';
import { signedHeaders } from '../../shared/webhooks/signing.ts';
import { webhookSecretContext } from '../../shared/webhooks/secrets.ts';
import { checkWebhookUrl } from '../../shared/webhooks/url-policy.ts';
import { attemptDelivery, type AttemptResult } from '../../shared/webhooks/transport.ts';
import type { WorkerDeps } from '../context.ts';

interface DeliveryRow {
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

/**
 * One (endpoint, event), at least once: a 2xx ends it; a failure is logged and retried with
 * backoff and jitter until PADDOCK_WEBHOOK_RETRY_HOURS after the event, when the delivery is
 * given up and the endpoint disabled unless it has answered since the event. A sandbox's events
 * reach an endpoint in order (a later one waits for the earlier to end), and at most
 * PADDOCK_WEBHOOK_CONCURRENCY_PER_ENDPOINT deliveries to one endpoint and
 * PADDOCK_WEBHOOK_CONCURRENCY_PER_ACCOUNT to one account's endpoints run at once on all workers,
 * so one account's slow receivers hold a bounded part of the workers and cost that account alone.
 * Waiting moves the job back to the delayed set, where it holds no worker slot and uses no try.
 * A worker killed mid-delivery: the job is taken over and sent again, with the same webhook-id
 * (the receiver's key to deduplicate); its leases expire on their own.
 */
export async function deliverWebhookJob(job: Job, deps: WorkerDeps, token?: string): Promise<string> {
  const { endpointId, eventId } = parseWebhookPayload('deliver', job.data);
  const em = deps.orm.em.fork();
  const row = await loadDelivery(em, endpointId, eventId);
  if (!row) return 'gone';
  if (row.state !== 'pending') return row.state;
  const isTest = row.target_endpoint_id === endpointId;
  if (row.disabled_at && !isTest) {
    await finish(em, endpointId, eventId, 'failed');
    return 'endpoint-disabled';
  }
  // Never before its retry is due, however the job came to run (a wake-up meant for it when it
  // waited its turn, a duplicate enqueued by the sweep): the backoff stands.
  const dueInMs = row.next_attempt_at ? new Date(row.next_attempt_at).getTime() - Date.now() : 0;
  if (dueInMs > 50) return postpone(job, token, dueInMs);
  const waitMs = await earlierPendingWait(em, endpointId, row);
  if (waitMs !== undefined) return postpone(job, token, waitMs);
  const bounds: Bound[] = [
    { name: 'endpoint', key: `webhook:${endpointId}`, limit: deps.config.PADDOCK_WEBHOOK_CONCURRENCY_PER_ENDPOINT },
    { name: 'account', key: `webhook-account:${row.account_id}`, limit: deps.config.PADDOCK_WEBHOOK_CONCURRENCY_PER_ACCOUNT },
  ];
  const ttlMs = deps.config.PADDOCK_WEBHOOK_TIMEOUT_SECONDS * 1000 + 15_000;
  // Both bounds in one step (shared/leases.ts): a lease in each, or in neither.
  const lease = await deps.leases.acquire({ subjects: bounds, ttlMs });
  if (!lease.granted) return waitTurn(deps, job, token, bounds[lease.subjectIndex]!, ttlMs);
  // Out of any line it waited in: a wake-up is for a delivery still waiting.
  await deps.turns.leave(bounds.map((b) => b.key), job.id!).catch(() => undefined);
  let result: AttemptResult;
  try {
    result = await send(deps, endpointId, eventId, row);
  } finally {
    await lease.release().catch(() => undefined);
    // Each slot freed goes to the first delivery in line for it.
    await Promise.all(bounds.map((b) => deps.turns.wake(b.key))).catch(() => undefined);
  }
  return record(deps, em, job, token, { endpointId, eventId, row, result, isTest });
}

async function loadDelivery(em: EntityManager, endpointId: string, eventId: string): Promise<DeliveryRow | undefined> {
  const [row] = await em.execute<DeliveryRow[]>(
    `select d.state, d.attempts, d.next_attempt_at, d.sandbox_id, d.event_seq, w.account_id, w.url, w.disabled_at, w.secret_ciphertext,
            w.previous_secret_ciphertext, w.previous_secret_expires_at, w.last_success_at,
            e.type as event_type, e.data as event_data, e.created_at as event_created_at, e.target_endpoint_id
       from webhook_deliveries d
       join webhook_endpoints w on w.id = d.endpoint_id
       join events e on e.id = d.event_id
      where d.endpoint_id = ? and d.event_id = ?`,
    [endpointId, eventId],
  );
  return row;
}

/** While an earlier event of the same sandbox is still pending for this endpoint: how long to wait. */
async function earlierPendingWait(em: EntityManager, endpointId: string, row: DeliveryRow): Promise<number | undefined> {
  if (!row.sandbox_id) return undefined;
  const [earlier] = await em.execute<{ next_attempt_at: Date | null }[]>(
    `select next_attempt_at from webhook_deliveries
      where endpoint_id = ? and sandbox_id = ? and state = 'pending' and event_seq < ?
      order by event_seq limit 1`,
    [endpointId, row.sandbox_id, row.event_seq],
  );
  if (!earlier) return undefined;
  const until = earlier.next_attempt_at ? new Date(earlier.next_attempt_at).getTime() - Date.now() : 0;
  return Math.max(50, until + 50);
}

interface Bound {
  name: 'endpoint' | 'account';
  key: string;
  limit: number;
}

/**
 * Parks the delivery in the line of the bound it met (shared/jobs/turns.ts): woken when a slot
 * frees, or at the latest once every lease held now has run out, should its wake-up be lost.
 */
async function waitTurn(deps: WorkerDeps, job: Job, token: string | undefined, bound: Bound, leaseTtlMs: number): Promise<never> {
  deps.metrics.webhookDeferrals.inc({ bound: bound.name });
  await deps.turns.park(job, token, bound.key, leaseTtlMs * (1 + Math.random() / 2));
  try {
    // A slot freed between the refusal and the parking found nobody in line to wake: take it now.
    if ((await deps.leases.inUse(bound.key)) < bound.limit) await deps.turns.wake(bound.key);
  } catch {
    // Redis failing: the delivery is due at its fallback time all the same.
  }
  throw new DelayedError();
}

async function postpone(job: Job, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + Math.round(ms), token);
  throw new DelayedError();
}

async function send(deps: WorkerDeps, endpointId: string, eventId: string, row: DeliveryRow): Promise<AttemptResult> {
  const checked = checkWebhookUrl(row.url, deps.config.PADDOCK_WEBHOOK_ALLOW_LOCAL);
  if ('refused' in checked) return { ok: false, statusCode: null, error: checked.refused, refused: true, durationMs: 0 };
  if (!deps.webhookCipher) {
    return { ok: false, statusCode: null, error: 'webhook signing is not configured (PADDOCK_WEBHOOK_SECRETS_KEY)', refused: false, durationMs: 0 };
  }
  let secrets: string[];
  try {
    secrets = [deps.webhookCipher.decrypt(row.secret_ciphertext, webhookSecretContext(row.account_id, endpointId, 'current'))];
    if (row.previous_secret_ciphertext && row.previous_secret_expires_at && new Date(row.previous_secret_expires_at) > new Date()) {
      secrets.push(deps.webhookCipher.decrypt(row.previous_secret_ciphertext, webhookSecretContext(row.account_id, endpointId, 'previous')));
    }
  } catch {
    // Logged as a failed attempt (and retried): never sent unsigned, never the key in a message.
    return { ok: false, statusCode: null, error: 'the signing secret cannot be read (PADDOCK_WEBHOOK_SECRETS_KEY differs from the one it was stored with)', refused: false, durationMs: 0 };
  }
  const body = JSON.stringify(presentEvent({ id: eventId, type: row.event_type, createdAt: new Date(row.event_created_at), data: row.event_data }));
  return attemptDelivery(
    {
      target: checked.target,
      headers: signedHeaders(secrets, eventId, Math.floor(Date.now() / 1000), body),
      body,
      timeoutMs: deps.config.PADDOCK_WEBHOOK_TIMEOUT_SECONDS * 1000,
      maxResponseBytes: deps.config.PADDOCK_WEBHOOK_RESPONSE_MAX_BYTES,
    },
    deps.transport,
  );
}

interface Outcome {
  endpointId: string;
  eventId: string;
  row: DeliveryRow;
  result: AttemptResult;
  isTest: boolean;
}

/** Logs the attempt and moves the delivery on: delivered, retried later, or given up. */
async function record(deps: WorkerDeps, em: EntityManager, job: Job, token: string | undefined, o: Outcome): Promise<string> {
  const attempt = o.row.attempts + 1;
  const deadline = new Date(o.row.event_created_at).getTime() + deps.config.PADDOCK_WEBHOOK_RETRY_HOURS * 3600_000;
  const delay = retryDelayMs(`${o.endpointId}:${o.eventId}`, attempt, deps.config.PADDOCK_WEBHOOK_BACKOFF_BASE_MS, deps.config.PADDOCK_WEBHOOK_BACKOFF_MAX_SECONDS * 1000);
  const now = Date.now();
  const nextAt = o.result.ok || now >= deadline ? null : new Date(Math.min(now + delay, deadline));
  const outcome = o.result.ok ? 'success' : o.result.refused ? 'refused' : o.result.statusCode === null ? 'error' : 'failure';
  deps.metrics.webhookDeliveries.inc({ outcome });
  if (o.result.ok) deps.metrics.webhookLatency.observe((now - new Date(o.row.event_created_at).getTime()) / 1000);
  const disabled = await em.transactional(async (tx) => {
    // Logged at the instant its next retry is counted from, not at the commit: on a busy host the
    // transaction may begin later than the retry is due.
    await tx.execute(
      `insert into webhook_attempts (endpoint_id, event_id, event_type, attempt, status_code, error, duration_ms, next_retry_at, created_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [o.endpointId, o.eventId, o.row.event_type, attempt, o.result.statusCode, o.result.error, o.result.durationMs, nextAt, new Date(now)],
    );
    const state = o.result.ok ? 'delivered' : nextAt ? 'pending' : 'failed';
    await tx.execute(
      `update webhook_deliveries set attempts = ?, state = ?, next_attempt_at = ?, finished_at = case when ? = 'pending' then null else now() end
        where endpoint_id = ? and event_id = ?`,
      [attempt, state, nextAt, state, o.endpointId, o.eventId],
    );
    return o.result.ok ? markAnswered(tx, o) : markFailing(tx, o, state === 'failed');
  });
  if (disabled) await deps.events.announce([disabled]);
  if (!nextAt) return o.result.ok ? 'delivered' : 'given-up';
  return postpone(job, token, nextAt.getTime() - Date.now());
}

/** A 2xx: the endpoint works (a test event answered re-enables a disabled endpoint). */
async function markAnswered(tx: EntityManager, o: Outcome): Promise<undefined> {
  await tx.execute(
    `update webhook_endpoints set last_success_at = now(), failing_since = null,
            disabled_at = case when ? then null else disabled_at end,
            disabled_reason = case when ? then null else disabled_reason end
      where id = ?`,
    [o.isTest, o.isTest, o.endpointId],
  );
  return undefined;
}

/**
 * A failure; when it ends the delivery's retry window and the endpoint has not answered since the
 * event, the endpoint has failed for the whole window: disabled, and webhook.disabled recorded
 * with it.
 */
async function markFailing(tx: EntityManager, o: Outcome, givenUp: boolean) {
  await tx.execute('update webhook_endpoints set failing_since = coalesce(failing_since, now()) where id = ?', [o.endpointId]);
  if (!givenUp || o.isTest) return undefined;
  const [endpoint] = await tx.execute<{ id: string; url: string; disabled_at: Date }[]>(
    `update webhook_endpoints set disabled_at = now(), disabled_reason = 'failed for the whole retry window'
      where id = ? and disabled_at is null and (last_success_at is null or last_success_at < ?)
      returning id, url, disabled_at`,
    [o.endpointId, new Date(o.row.event_created_at)],
  );
  if (!endpoint) return undefined;
  return recordEvent(tx, {
    accountId: o.row.account_id,
    type: 'webhook.disabled',
    data: { webhook: { id: endpoint.id, url: endpoint.url, disabledAt: new Date(endpoint.disabled_at).toISOString(), lastEventId: o.eventId } },
  });
}

async function finish(em: EntityManager, endpointId: string, eventId: string, state: 'failed'): Promise<void> {
  await em.execute(`update webhook_deliveries set state = ?, finished_at = now(), next_attempt_at = null where endpoint_id = ? and event_id = ? and state = 'pending'`, [
    state,
    endpointId,
    eventId,
  ]);
}
