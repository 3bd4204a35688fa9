import { z } from 'zod';
import { Queue, type Job } from 'bullmq';
import type { Redis } from 'ioredis';

// The webhook jobs, on a queue of their own ("webhooks") so that a slow or failing receiver can
// never hold up the sandbox jobs (creates, destroys, expiries) nor the reaper. As in
// catalogue.ts: a zod payload parsed once when the job is enqueued, deterministic job ids (the
// same work enqueued twice is one job), idempotent processors.
export const WEBHOOK_QUEUE = 'webhooks';

const eventId = z.string().regex(/^evt_[0-9a-z]{24}$/);
const endpointId = z.string().regex(/^wh_[0-9a-z]{24}$/);

export const webhookJobCatalogue = {
  /** Fans an event (and any earlier undispatched one of its account) out to the account's endpoints. */
  dispatch: {
    payload: z.object({ eventId }),
    jobId: (p: { eventId: string }) => `dispatch-${p.eventId}`,
  },
  /** One (endpoint, event): delivered, retried with backoff and jitter, or given up at the window's end. */
  deliver: {
    payload: z.object({ endpointId, eventId }),
    jobId: (p: { endpointId: string; eventId: string }) => `deliver-${p.endpointId}-${p.eventId}`,
  },
} as const;

export type WebhookJobName = keyof typeof webhookJobCatalogue;
export type WebhookJobPayload<N extends WebhookJobName> = z.infer<(typeof webhookJobCatalogue)[N]['payload']>;

// Receiver failures are retried by the deliver processor itself (it knows the retry window and
// records each attempt); BullMQ's own tries cover what fails around it (the database away).
const OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 3600, count: 100_000 },
  removeOnFail: { age: 24 * 3600 },
} as const;

export function createWebhookQueue(connection: Redis, prefix: string): Queue {
  return new Queue(WEBHOOK_QUEUE, { connection, prefix: `${prefix}:bull` });
}

export async function enqueueWebhookJobs<N extends WebhookJobName>(queue: Queue, name: N, payloads: WebhookJobPayload<N>[]): Promise<Job[]> {
  if (payloads.length === 0) return [];
  const def = webhookJobCatalogue[name];
  return queue.addBulk(
    payloads.map((p) => {
      const data = def.payload.parse(p) as WebhookJobPayload<N>;
      return { name, data, opts: { ...OPTIONS, jobId: def.jobId(data as never) } };
    }),
  );
}

export function parseWebhookPayload<N extends WebhookJobName>(name: N, data: unknown): WebhookJobPayload<N> {
  return webhookJobCatalogue[name].payload.parse(data) as WebhookJobPayload<N>;
}
