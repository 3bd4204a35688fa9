import type { Job, Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import { enqueueWebhookJobs, parseWebhookPayload } from '../../shared/jobs/webhooks.ts';
import { dispatchEvents, type EndpointTargets, type PendingEvent } from '../../shared/repositories/webhooks.ts';

export interface DispatchDeps {
  /** A unit of work of its own for each job. */
  unitOfWork: () => EntityManager;
  /** Where the deliver jobs go. */
  webhookQueue: Queue;
}

/**
 * Fans an event out to its account's endpoints: one delivery row and one deliver job per
 * (endpoint, event). Every earlier undispatched event of the account goes first, in the same
 * transaction (under a per-account lock), so an endpoint always holds the deliveries of a
 * sandbox's earlier events before its later ones: the deliver processor keeps them in order.
 * Idempotent: a dispatched event is skipped, and a delivery row exists once.
 */
export async function dispatchEventJob(job: Job, deps: DispatchDeps): Promise<string> {
  const { eventId } = parseWebhookPayload('dispatch', job.data);
  const deliveries = await dispatchEvents(deps.unitOfWork(), eventId, targetsOf);
  const jobs = deliveries.map((d) => ({ endpointId: d.endpoint_id, eventId: d.event_id }));
  // A job lost here (Redis away) is enqueued again by the sweep, from the pending row.
  await enqueueWebhookJobs(deps.webhookQueue, 'deliver', jobs);
  return `${jobs.length} deliveries`;
}

/** A test event goes to its endpoint only; others to the endpoints subscribed that existed when it happened. */
function targetsOf(event: PendingEvent, endpoints: EndpointTargets[]): string[] {
  if (event.target_endpoint_id) return [event.target_endpoint_id];
  if (event.type === 'webhook.test') return [];
  return endpoints
    .filter((ep) => new Date(ep.created_at) <= new Date(event.created_at) && (ep.event_types === null || ep.event_types.includes(event.type)))
    .map((ep) => ep.id);
}
