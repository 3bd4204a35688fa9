import type { DeliveryAttempt, PaddockEvent, Webhook } from '../api/types.ts';
import { table } from './format.ts';

/** One line per event: time, type, and what it is about. */
export function eventLine(e: PaddockEvent): string {
  return `${e.createdAt}  ${e.type.padEnd(17)}  ${eventSubject(e)}  ${e.id}`;
}

function eventSubject(e: PaddockEvent): string {
  const s = e.data.sandbox;
  if (s) return `${s.id} ${s.status}${s.destroyReason ? ` (${s.destroyReason})` : ''}`;
  if (e.type === 'usage.threshold') {
    const d = e.data as { threshold?: number; usage?: { sandboxHours?: { used: number; limit: number } } };
    return `${d.threshold}% of ${d.usage?.sandboxHours?.limit} sandbox-hours`;
  }
  const webhook = (e.data as { webhook?: { id: string } }).webhook;
  return webhook ? webhook.id : '';
}

export function webhookTable(list: Webhook[]): string | undefined {
  if (list.length === 0) return undefined;
  return table(
    ['ID', 'URL', 'EVENTS', 'STATE', 'CREATED'],
    list.map((w) => [w.id, w.url, w.events.join(','), w.disabledAt ? `disabled ${w.disabledAt}` : 'enabled', w.createdAt]),
  );
}

export function deliveryTable(list: DeliveryAttempt[]): string | undefined {
  if (list.length === 0) return undefined;
  return table(
    ['TIME', 'EVENT', 'TYPE', 'TRY', 'STATUS', 'MS', 'NEXT RETRY', 'ERROR'],
    list.map((d) => [d.createdAt, d.eventId, d.eventType, String(d.attempt), d.statusCode === null ? '-' : String(d.statusCode), String(d.durationMs), d.nextRetryAt ?? '-', d.error ?? '']),
  );
}
