import type { Job } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import { enqueueWebhookJobs, parseWebhookPayload } from '../../shared/jobs/webhooks.ts';
import type { WorkerDeps } from '../context.ts';

const DISPATCH_LOCK_CLASS = 7_361_004;

interface PendingEvent {
  id: string;
  seq: string;
  sandbox_id: string | null;
  type: string;
  target_endpoint_id: string | null;
  created_at: Date;
}

interface EndpointRow {
  id: string;
  event_types: string[] | null;
  created_at: Date;
}

/**
 * Fans an event out to its account's endpoints: one delivery row and one deliver job per
 * (endpoint, event). Every earlier undispatched event of the account goes first, in the same
 * transaction (under a per-account lock), so an endpoint always holds the deliveries of a
 * sandbox's earlier events before its later ones: the deliver processor keeps them in order.
 * Idempotent: a dispatched event is skipped, and a delivery row exists once.
 */
export async function dispatchEventJob(job: Job, deps: WorkerDeps): Promise<string> {
  const { eventId } = parseWebhookPayload('dispatch', job.data);
  const deliveries = await deps.orm.em.fork().transactional((tx) => dispatchUpTo(tx, eventId));
  const jobs = deliveries.map((d) => ({ endpointId: d.endpoint_id, eventId: d.event_id }));
  // A job lost here (Redis away) is enqueued again by the sweep, from the pending row.
  await enqueueWebhookJobs(deps.webhookQueue, 'deliver', jobs);
  return `${jobs.length} deliveries`;
}

async function dispatchUpTo(tx: EntityManager, eventId: string): Promise<{ endpoint_id: string; event_id: string }[]> {
  const [event] = await tx.execute<{ seq: string; account_id: string }[]>('select seq, account_id from events where id = ?', [eventId]);
  if (!event) return [];
  await tx.execute('select pg_advisory_xact_lock(?, hashtext(?))', [DISPATCH_LOCK_CLASS, event.account_id]);
  const pending = await tx.execute<PendingEvent[]>(
    `select id, seq, sandbox_id, type, target_endpoint_id, created_at from events
      where account_id = ? and dispatched_at is null and seq <= ? order by seq`,
    [event.account_id, event.seq],
  );
  if (pending.length === 0) return [];
  const endpoints = await tx.execute<EndpointRow[]>(
    'select id, event_types, created_at from webhook_endpoints where account_id = ? and disabled_at is null',
    [event.account_id],
  );
  const rows = pending.flatMap((e) => targetsOf(e, endpoints).map((endpointId) => [endpointId, e.id, e.sandbox_id, e.seq] as const));
  let inserted: { endpoint_id: string; event_id: string }[] = [];
  if (rows.length > 0) {
    inserted = await tx.execute(
      `insert into webhook_deliveries (endpoint_id, event_id, sandbox_id, event_seq)
       values ${rows.map(() => '(?, ?, ?, ?)').join(', ')}
       on conflict do nothing returning endpoint_id, event_id`,
      rows.flat(),
    );
  }
  await tx.execute(`update events set dispatched_at = now() where id in (${pending.map(() => '?').join(', ')})`, pending.map((e) => e.id));
  return inserted;
}

/** A test event goes to its endpoint only; others to the endpoints subscribed that existed when it happened. */
function targetsOf(event: PendingEvent, endpoints: EndpointRow[]): string[] {
  if (event.target_endpoint_id) return [event.target_endpoint_id];
  if (event.type === 'webhook.test') return [];
  return endpoints
    .filter((ep) => new Date(ep.created_at) <= new Date(event.created_at) && (ep.event_types === null || ep.event_types.includes(event.type)))
    .map((ep) => ep.id);
}
