import type { WebhookRow, AttemptRow } from '../services/webhooks.ts';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** Never the secret: only the create and rotate answers carry it, once. */
export function presentWebhook(row: WebhookRow) {
  return {
    id: row.id,
    url: row.url,
    events: row.event_types ?? ['*'],
    description: row.description,
    createdAt: iso(row.created_at)!,
    disabledAt: iso(row.disabled_at),
    disabledReason: row.disabled_reason,
  };
}

export function presentAttempt(row: AttemptRow) {
  return {
    eventId: row.event_id,
    eventType: row.event_type,
    attempt: row.attempt,
    statusCode: row.status_code,
    error: row.error,
    durationMs: row.duration_ms,
    createdAt: iso(row.created_at)!,
    nextRetryAt: iso(row.next_retry_at),
  };
}
