import { z } from 'zod';
import { NetworkPolicy } from '../network/policy.ts';
import { Queue, type JobsOptions, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { imageKey } from '../pool/warm-pool.ts';

// Every job Paddock runs, in one place: its name, its payload schema, how often it is tried
// and how long to wait between tries. Job ids are deterministic, so enqueuing the same work
// twice (a retried request, two replicas racing) yields one job; processors are idempotent.
export const SANDBOX_QUEUE = 'sandboxes';

const sandboxId = z.string().regex(/^sbx_[0-9a-z]{24}$/);

export const jobCatalogue = {
  /**
   * Carries what the API decided (the resolved image, the cap's instant): the worker derives neither
   * again. And the row's other facts (its account, birth and metadata), so that a job taken at once
   * needs no read of the row before the runtime's create; they are optional because a job queued by
   * an API from before them has only the first three, and the worker then reads the row.
   */
  create: {
    payload: z.object({
      sandboxId,
      image: z.string().min(1).max(512),
      expiresAt: z.iso.datetime(),
      accountId: z.string().min(1).max(100).optional(),
      createdAt: z.iso.datetime().optional(),
      metadata: z.record(z.string().max(64), z.string().max(512)).optional(),
      /**
       * createdAt + the session cap, when the sandbox ends earlier by a timeout of its own: a
       * runtime's backstop is set at the cap, since the sandbox's own end may move later again.
       */
      capAt: z.iso.datetime().optional(),
      /** The snapshot whose workspace the sandbox starts with (shared/snapshots/). */
      snapshotId: z.string().min(1).max(100).optional(),
      /** Its workspace is snapshotted before it is destroyed: its sandbox.running event says so. */
      snapshotOnDestroy: z.boolean().optional(),
      /** Where its programs may connect; absent: none. */
      network: NetworkPolicy.optional(),
    }),
    attempts: 5,
    backoff: { type: 'exponential', delay: 500 },
    jobId: (p: { sandboxId: string }) => `create-${p.sandboxId}`,
  },
  destroy: {
    payload: z.object({
      sandboxId,
      reason: z.enum(['user', 'expired', 'failed']),
      /** Its workspace is snapshotted first (snapshotOnDestroy): a user's destroy reads no row without it. */
      final: z.boolean().optional(),
    }),
    attempts: 10,
    backoff: { type: 'exponential', delay: 500 },
    jobId: (p: { sandboxId: string }) => `destroy-${p.sandboxId}`,
  },
  /**
   * Delayed until expiresAt. A moved end (a timeout set later) queues another, whose id carries
   * the instant it is due (`at`, ms): a job id once used is not added again while BullMQ keeps it,
   * and the job queued at the create keeps its own. Either only ends a sandbox whose row says it
   * is due, so one left behind by a move does nothing.
   */
  expire: {
    payload: z.object({ sandboxId, at: z.number().int().nonnegative().optional() }),
    attempts: 10,
    backoff: { type: 'exponential', delay: 500 },
    jobId: (p: { sandboxId: string; at?: number }) => (p.at === undefined ? `expire-${p.sandboxId}` : `expire-${p.sandboxId}-${p.at}`),
  },
  /** Delayed until PADDOCK_EXPIRY_WARNING_SECONDS before expiresAt: records sandbox.expiring. Moves as `expire` does. */
  expiring: {
    payload: z.object({ sandboxId, at: z.number().int().nonnegative().optional() }),
    attempts: 10,
    backoff: { type: 'exponential', delay: 500 },
    jobId: (p: { sandboxId: string; at?: number }) => (p.at === undefined ? `expiring-${p.sandboxId}` : `expiring-${p.sandboxId}-${p.at}`),
  },
  /** Brings an image's warm pool back to PADDOCK_WARM_POOL_SIZE; one at a time per image. */
  refill: {
    payload: z.object({ image: z.string().min(1).max(512) }),
    attempts: 3,
    backoff: { type: 'exponential', delay: 1000 },
    jobId: (p: { image: string }) => `refill-${imageKey(p.image)}`,
    // Gone once done, so that the next claim's refill is a new job, not a duplicate of this one.
    keep: false,
  },
  /** Copies a snapshot taken without waiting (shared/snapshots/); a retry finds it ended and does nothing. */
  snapshot: {
    payload: z.object({ snapshotId: z.string().min(1).max(100), accountId: z.string().min(1).max(100) }),
    attempts: 1,
    backoff: { type: 'exponential', delay: 1000 },
    jobId: (p: { snapshotId: string }) => `snapshot-${p.snapshotId}`,
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

/** A job of the catalogue: its name, its payload (of that name), and a delay when it is due later. */
export type JobRequest = { [N in JobName]: { name: N; payload: JobPayload<N>; delayMs?: number } }[JobName];

/** The payload validated once, here, and the options the catalogue gives the job (its deterministic id among them). */
function prepared<N extends JobName>({ name, payload, delayMs }: { name: N; payload: JobPayload<N>; delayMs?: number }): { name: N; data: JobPayload<N>; opts: JobsOptions } {
  const def = jobCatalogue[name];
  const data = def.payload.parse(payload) as JobPayload<N>;
  return {
    name,
    data,
    opts: {
      ...('keep' in def && def.keep === false ? { removeOnComplete: true, removeOnFail: true } : RETENTION),
      // Each definition's jobId takes its own payload, which `data` is (parsed by its schema above).
      jobId: (def.jobId as (p: JobPayload<N>) => string)(data),
      attempts: def.attempts,
      backoff: def.backoff,
      ...(delayMs !== undefined ? { delay: Math.max(0, delayMs) } : {}),
    },
  };
}

/** Validates the payload and enqueues the job under its deterministic id. */
export async function enqueue<N extends JobName>(
  queue: Queue,
  name: N,
  payload: JobPayload<N>,
  options: { delayMs?: number } = {},
): Promise<Job> {
  const job = prepared({ name, payload, delayMs: options.delayMs });
  return queue.add(job.name, job.data, job.opts);
}

/** Several jobs at once, in one round trip to Redis (each as `enqueue` would add it). */
export async function enqueueAll(queue: Queue, jobs: readonly JobRequest[]): Promise<Job[]> {
  if (jobs.length === 0) return [];
  return queue.addBulk(jobs.map((job) => prepared<JobName>(job)));
}

export function parsePayload<N extends JobName>(name: N, data: unknown): JobPayload<N> {
  return jobCatalogue[name].payload.parse(data) as JobPayload<N>;
}
