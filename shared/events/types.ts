// Event types (docs/api.md, "Events and webhooks"). sandbox.* report a sandbox's transitions;
// preview.* a port of a sandbox made reachable, and reachable no more; snapshot.* a workspace
// copied (or the copy failing) and its copy deleted;
// network.refused a sandbox's egress refusing connections (at most one a minute a sandbox);
// usage.threshold the account crossing 80% and 100% of its monthly sandbox-hours; webhook.disabled
// an endpoint given up after failing for the whole retry window; webhook.test is sent on request
// to one endpoint only.
export const SANDBOX_EVENT_TYPES = ['sandbox.created', 'sandbox.running', 'sandbox.failed', 'sandbox.expiring', 'sandbox.destroyed'] as const;
export const EVENT_TYPES = [...SANDBOX_EVENT_TYPES, 'preview.created', 'preview.revoked', 'snapshot.created', 'snapshot.failed', 'snapshot.deleted', 'network.refused', 'usage.threshold', 'webhook.disabled', 'webhook.test'] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Types an endpoint may subscribe to (webhook.test always reaches the endpoint it is sent to). */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter((t) => t !== 'webhook.test');

/** An event as recorded: what the API lists and what a webhook body carries (plus seq, internal). */
export interface RecordedEvent {
  seq: string;
  id: string;
  accountId: string;
  sandboxId: string | null;
  type: EventType;
  createdAt: Date;
  data: Record<string, unknown>;
  /** Recorded dispatched: no endpoint could receive it, so it needs no webhook fan-out. */
  dispatched?: boolean;
}

/** The public event object: {id, type, createdAt, data}. */
export function presentEvent(e: Pick<RecordedEvent, 'id' | 'type' | 'createdAt' | 'data'>) {
  return { id: e.id, type: e.type, createdAt: e.createdAt.toISOString(), data: e.data };
}
