import type { Job } from 'bullmq';
import { Sandbox, type DestroyReason } from '../../shared/db/entities.ts';
import { jobCatalogue, parsePayload } from '../../shared/jobs/catalogue.ts';
import { markDestroyed, markTerminating } from '../../shared/sandboxes/transitions.ts';
import type { WorkerDeps } from '../context.ts';

const HOUSEKEEPING_TIMEOUT_MS = 2000;

export async function destroySandboxJob(job: Job, deps: WorkerDeps): Promise<string> {
  const { sandboxId, reason } = parsePayload('destroy', job.data);
  return destroySandbox(deps, sandboxId, reason, 'destroy-job');
}

/** The delayed job scheduled at creation for the sandbox's expiresAt. */
export async function expireSandboxJob(job: Job, deps: WorkerDeps): Promise<string> {
  const { sandboxId } = parsePayload('expire', job.data);
  return destroySandbox(deps, sandboxId, 'expired', 'expire-job');
}

/**
 * Kills the runtime sandbox, then records it destroyed. Idempotent: an already destroyed
 * sandbox is still removed from the runtime (in case a crash left it there) and reports done.
 */
export async function destroySandbox(
  deps: WorkerDeps,
  sandboxId: string,
  reason: DestroyReason,
  source: string,
): Promise<string> {
  const em = deps.orm.em.fork();
  const row = await em.findOne(Sandbox, { id: sandboxId });
  if (!row) return 'unknown';
  if (row.state === 'active') await markTerminating(em, sandboxId, reason);
  await deps.runtime.destroy(sandboxId);
  const destroyed = await markDestroyed(em, sandboxId, reason);
  if (destroyed) {
    const finalReason = row.destroyReason ?? reason;
    deps.metrics.sandboxesDestroyed.inc({ reason: finalReason });
    if (finalReason === 'expired') deps.metrics.reaperLag.observe({ source }, Math.max(0, (Date.now() - row.expiresAt.getTime()) / 1000));
    // The expiry job has nothing left to do; drop it so Redis does not keep it until the cap.
    // Housekeeping, bounded: a Redis that is down (or never reached since this process started,
    // when BullMQ waits for it without limit) must not hold up the destroy, nor the sweep.
    if (source !== 'expire-job') {
      await settleWithin(deps.queue.remove(jobCatalogue.expire.jobId({ sandboxId })), HOUSEKEEPING_TIMEOUT_MS);
    }
  }
  return destroyed ? 'destroyed' : 'already-destroyed';
}

/** Waits for `work` (its failure ignored) at most `ms`. */
async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
