import type { WebhookRow, AttemptRow } from '../../shared/repositories/webhooks.ts';
import { isoOf } from '../../shared/db/timestamps.ts';

/** Never the secret: only the create and rotate answers carry it, once. */
export function presentWebhook(row: WebhookRow) {
  return {
    id: row.id,
    url: row.url,
    events: row.event_types ?? ['*'],
    description: row.description,
    createdAt: isoOf(row.created_at)!,
    disabledAt: isoOf(row.disabled_at),
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
    createdAt: isoOf(row.created_at)!,
    nextRetryAt: isoOf(row.next_retry_at),
  };
}
