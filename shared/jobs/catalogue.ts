import { z } from 'zod';
import { Queue, type JobsOptions, type Job } from 'bullmq';
import type { Redis } from 'ioredis';

// Every job Paddock runs, in one place: its name, its payload schema, how often it is tried
// and how long to wait between tries. Job ids are deterministic, so enqueuing the same work
// twice (a retried request, two replicas racing) yields one job; processors are idempotent.
export const SANDBOX_QUEUE = 'sandboxes';

const sandboxId = z.string().regex(/^sbx_[0-9a-z]{24}$/);

export const jobCatalogue = {
  create: {
    payload: z.object({ sandboxId }),
    attempts: 5,
    backoff: { type: 'exponential', delay: 500 },
    jobId: (p: { sandboxId: string }) => `create-${p.sandboxId}`,
  },
  destroy: {
    payload: z.object({ sandboxId, reason: z.enum(['user', 'expired', 'failed']) }),
    attempts: 10,
    backoff: { type: 'exponential', delay: 500 },
    jobId: (p: { sandboxId: string }) => `destroy-${p.sandboxId}`,
  },
  expire: {
    payload: z.object({ sandboxId }),
    attempts: 10,
    backoff: { type: 'exponential', delay: 500 },
    jobId: (p: { sandboxId: string }) => `expire-${p.sandboxId}`,
  },
} as const;

export type JobName = keyof typeof jobCatalogue;
export type JobPayload<N extends JobName> = z.infer<(typeof jobCatalogue)[N]['payload']>;

const RETENTION: JobsOptions = {
  // Finished jobs stay a while so a duplicate enqueue of the same id is still recognised.
  removeOnComplete: { age: 3600, count: 50_000 },
  removeOnFail: { age: 24 * 3600 },
};

export function createSandboxQueue(connection: Redis, prefix: string): Queue {
  return new Queue(SANDBOX_QUEUE, { connection, prefix: `${prefix}:bull` });
}

/** Validates the payload and enqueues the job under its deterministic id. */
export async function enqueue<N extends JobName>(
  queue: Queue,
  name: N,
  payload: JobPayload<N>,
  options: { delayMs?: number } = {},
): Promise<Job> {
  const def = jobCatalogue[name];
  const data = def.payload.parse(payload);
  return queue.add(name, data, {
    ...RETENTION,
    jobId: def.jobId(data),
    attempts: def.attempts,
    backoff: def.backoff,
    ...(options.delayMs !== undefined ? { delay: Math.max(0, options.delayMs) } : {}),
  });
}

export function parsePayload<N extends JobName>(name: N, data: unknown): JobPayload<N> {
  return jobCatalogue[name].payload.parse(data) as JobPayload<N>;
}
