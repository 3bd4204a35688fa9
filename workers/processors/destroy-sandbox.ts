import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DestroyReason } from '../../shared/db/entities.ts';
import { dateOf } from '../../shared/db/timestamps.ts';
import { jobCatalogue, parsePayload } from '../../shared/jobs/catalogue.ts';
import type { SandboxLifecycle } from '../../shared/sandboxes/lifecycle.ts';
import { settleWithin } from '../../shared/settle-within.ts';
import type { WorkerMetrics } from '../metrics.ts';

const HOUSEKEEPING_TIMEOUT_MS = 2000;

/** What ending a sandbox needs: its lifecycle, the queue whose jobs for it are dropped, and the counters. */
export interface DestroyJobDeps {
  sandboxes: SandboxLifecycle;
  queue: Pick<Queue, 'remove'>;
  redis: Redis;
  metrics: Pick<WorkerMetrics, 'sandboxesDestroyed' | 'reaperLag'>;
}

export async function destroySandboxJob(job: Job, deps: DestroyJobDeps): Promise<string> {
  const { sandboxId, reason, final } = parsePayload('destroy', job.data);
  return destroySandbox(deps, sandboxId, reason, 'destroy-job', { final });
}

/** The delayed job scheduled for the sandbox's expiresAt (at its create, and at each move of its end). */
export async function expireSandboxJob(job: Job, deps: DestroyJobDeps): Promise<string> {
  const { sandboxId } = parsePayload('expire', job.data);
  return destroySandbox(deps, sandboxId, 'expired', 'expire-job');
}

/** The delayed job scheduled at creation for PADDOCK_EXPIRY_WARNING_SECONDS before expiresAt. */
export async function expiringSandboxJob(job: Job, deps: Pick<DestroyJobDeps, 'sandboxes'>): Promise<string> {
  const { sandboxId } = parsePayload('expiring', job.data);
  return (await deps.sandboxes.warnExpiring(sandboxId)) ? 'warned' : 'skipped';
}

/**
 * Ends the sandbox (shared/sandboxes/lifecycle.ts), then counts it and drops its jobs that have
 * nothing left to do. Idempotent: an already destroyed sandbox is still removed from the runtime
 * and reports done.
 */
export async function destroySandbox(deps: DestroyJobDeps, sandboxId: string, reason: DestroyReason, source: string, known: { final?: boolean } = {}): Promise<string> {
  const destroyed = await deps.sandboxes.end(sandboxId, reason, known);
  if (destroyed === 'unknown' || destroyed === 'not-due' || destroyed === 'elsewhere') return destroyed;
  if (destroyed) {
    const finalReason = destroyed.destroy_reason ?? reason;
    deps.metrics.sandboxesDestroyed.inc({ reason: finalReason });
    if (finalReason === 'expired') deps.metrics.reaperLag.observe({ source }, Math.max(0, (Date.now() - dateOf(destroyed.expires_at).getTime()) / 1000));
    // The expiry job has nothing left to do; drop it so Redis does not keep it until the cap.
    // Housekeeping, bounded: a Redis that is down (or never reached since this process started,
    // when BullMQ waits for it without limit) must not hold up the destroy, nor the sweep.
    // A moved end's job carries its moment (shared/jobs/catalogue.ts); one of an earlier end finds nothing to do.
    const moved = jobCatalogue.expire.jobId({ sandboxId, at: dateOf(destroyed.expires_at).getTime() });
    const jobIds = [jobCatalogue.expiring.jobId({ sandboxId }), ...(source === 'expire-job' ? [] : [jobCatalogue.expire.jobId({ sandboxId }), moved])];
    await settleWithin(deps.redis, () => Promise.all(jobIds.map((jobId) => deps.queue.remove(jobId))), HOUSEKEEPING_TIMEOUT_MS);
  }
  return destroyed ? 'destroyed' : 'already-destroyed';
}
