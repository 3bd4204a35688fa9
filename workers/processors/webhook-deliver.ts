import { DelayedError, type Job } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../shared/config.ts';
import type { EventAnnouncer } from '../../shared/events/announce.ts';
import { parseWebhookPayload } from '../../shared/jobs/webhooks.ts';
import type { LeaseTurns } from '../../shared/jobs/turns.ts';
import type { InFlightLeases } from '../../shared/leases.ts';
import { presentEvent } from '../../shared/events/types.ts';
import { earlierPending, finishDelivery, findDelivery, recordAttempt, type DeliveryRow } from '../../shared/repositories/webhooks.ts';
import type { SecretCipher } from '../../shared/secrets/cipher.ts';
import { orderWaitMs, retryDelayMs } from '../../shared/webhooks/backoff.ts';
import { signedHeaders } from '../../shared/webhooks/signing.ts';
import { webhookSecretContext } from '../../shared/webhooks/secrets.ts';
import { checkWebhookUrl } from '../../shared/webhooks/url-policy.ts';
import { attemptDelivery, type AttemptResult, type WebhookTransport } from '../../shared/webhooks/transport.ts';
import type { WorkerMetrics } from '../metrics.ts';

export interface DeliveryDeps {
  /** A unit of work of its own for each job. */
  unitOfWork: () => EntityManager;
  config: Pick<
    Config,
    | 'PADDOCK_WEBHOOK_CONCURRENCY_PER_ENDPOINT'
    | 'PADDOCK_WEBHOOK_CONCURRENCY_PER_ACCOUNT'
    | 'PADDOCK_WEBHOOK_TIMEOUT_SECONDS'
    | 'PADDOCK_WEBHOOK_ALLOW_LOCAL'
    | 'PADDOCK_WEBHOOK_RESPONSE_MAX_BYTES'
    | 'PADDOCK_WEBHOOK_RETRY_HOURS'
    | 'PADDOCK_WEBHOOK_BACKOFF_BASE_MS'
    | 'PADDOCK_WEBHOOK_BACKOFF_MAX_SECONDS'
  >;
  metrics: Pick<WorkerMetrics, 'webhookDeferrals' | 'webhookDeliveries' | 'webhookLatency'>;
  /** Per-endpoint and per-account bounds on deliveries in progress, across workers. */
  leases: InFlightLeases;
  /** The deliveries waiting for a slot of those bounds. */
  turns: LeaseTurns;
  /** Decrypts the signing secrets; absent without PADDOCK_WEBHOOK_SECRETS_KEY. */
  webhookCipher: SecretCipher | undefined;
  transport: WebhookTransport;
  /** Announces the webhook.disabled event of an endpoint given up on. */
  events: Pick<EventAnnouncer, 'announce'>;
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
export async function deliverWebhookJob(job: Job, deps: DeliveryDeps, token?: string): Promise<string> {
  const { endpointId, eventId } = parseWebhookPayload('deliver', job.data);
  const em = deps.unitOfWork();
  const row = await findDelivery(em, endpointId, eventId);
  if (!row) return 'gone';
  if (row.state !== 'pending') return row.state;
  const isTest = row.target_endpoint_id === endpointId;
  if (row.disabled_at && !isTest) {
    await finishDelivery(em, endpointId, eventId, 'failed');
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

/** While an earlier event of the same sandbox is still pending for this endpoint: how long to wait. */
async function earlierPendingWait(em: EntityManager, endpointId: string, row: DeliveryRow): Promise<number | undefined> {
  if (!row.sandbox_id) return undefined;
  const earlier = await earlierPending(em, endpointId, row.sandbox_id, row.event_seq);
  return earlier ? orderWaitMs(new Date(earlier.due_at), Date.now()) : undefined;
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
async function waitTurn(deps: DeliveryDeps, job: Job, token: string | undefined, bound: Bound, leaseTtlMs: number): Promise<never> {
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

async function send(deps: DeliveryDeps, endpointId: string, eventId: string, row: DeliveryRow): Promise<AttemptResult> {
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
async function record(deps: DeliveryDeps, em: EntityManager, job: Job, token: string | undefined, o: Outcome): Promise<string> {
  const attempt = o.row.attempts + 1;
  const deadline = new Date(o.row.event_created_at).getTime() + deps.config.PADDOCK_WEBHOOK_RETRY_HOURS * 3600_000;
  const delay = retryDelayMs(`${o.endpointId}:${o.eventId}`, attempt, deps.config.PADDOCK_WEBHOOK_BACKOFF_BASE_MS, deps.config.PADDOCK_WEBHOOK_BACKOFF_MAX_SECONDS * 1000);
  const now = Date.now();
  const nextAt = o.result.ok || now >= deadline ? null : new Date(Math.min(now + delay, deadline));
  const outcome = o.result.ok ? 'success' : o.result.refused ? 'refused' : o.result.statusCode === null ? 'error' : 'failure';
  deps.metrics.webhookDeliveries.inc({ outcome });
  if (o.result.ok) deps.metrics.webhookLatency.observe((now - new Date(o.row.event_created_at).getTime()) / 1000);
  // A failure that ends the retry window when the endpoint has not answered since the event: the
  // endpoint has failed for the whole window, and is disabled (webhook.disabled recorded with it).
  const disabled = await recordAttempt(em, {
    endpointId: o.endpointId,
    eventId: o.eventId,
    eventType: o.row.event_type,
    accountId: o.row.account_id,
    eventCreatedAt: new Date(o.row.event_created_at),
    attempt,
    statusCode: o.result.statusCode,
    error: o.result.error,
    durationMs: o.result.durationMs,
    // Logged at the instant its next retry is counted from, not at the commit: on a busy host the
    // transaction may begin later than the retry is due.
    at: new Date(now),
    nextAttemptAt: nextAt,
    state: o.result.ok ? 'delivered' : nextAt ? 'pending' : 'failed',
    ok: o.result.ok,
    isTest: o.isTest,
  });
  if (disabled) await deps.events.announce([disabled]);
  if (!nextAt) return o.result.ok ? 'delivered' : 'given-up';
  return postpone(job, token, nextAt.getTime() - Date.now());
}
