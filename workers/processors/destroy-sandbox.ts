import type { Job } from 'bullmq';
import type { DestroyReason } from '../../shared/db/entities.ts';
import { ormPool } from '../../shared/db/orm.ts';
import { dateOf } from '../../shared/db/timestamps.ts';
import { findSandbox } from '../../shared/repositories/sandboxes.ts';
import { jobCatalogue, parsePayload } from '../../shared/jobs/catalogue.ts';
import { markDestroyed, markExpiring, markTerminating } from '../../shared/sandboxes/transitions.ts';
import { settleWithin } from '../../shared/settle-within.ts';
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

/** The delayed job scheduled at creation for PADDOCK_EXPIRY_WARNING_SECONDS before expiresAt. */
export async function expiringSandboxJob(job: Job, deps: WorkerDeps): Promise<string> {
  const { sandboxId } = parsePayload('expiring', job.data);
  return (await markExpiring(deps.orm.em.fork(), sandboxId, deps.events)) ? 'warned' : 'skipped';
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
  // Only a user's DELETE queues a destroy for `user`, and it marked the sandbox terminating first
  // (requestDestroy): nothing to read or mark, and the runtime's destroy starts a round trip sooner.
  if (reason !== 'user') {
    const row = await findSandbox(await ormPool(em), sandboxId);
    if (!row) return 'unknown';
    // One asked for already keeps its first reason.
    if (row.state === 'active' && row.status !== 'terminating') await markTerminating(em, sandboxId, reason, deps.events);
  }
  await deps.runtime.destroy(sandboxId);
  const destroyed = await markDestroyed(em, sandboxId, reason, undefined, deps.events);
  if (destroyed) {
    const finalReason = destroyed.destroy_reason ?? reason;
    deps.metrics.sandboxesDestroyed.inc({ reason: finalReason });
    if (finalReason === 'expired') deps.metrics.reaperLag.observe({ source }, Math.max(0, (Date.now() - dateOf(destroyed.expires_at).getTime()) / 1000));
    // The expiry job has nothing left to do; drop it so Redis does not keep it until the cap.
    // Housekeeping, bounded: a Redis that is down (or never reached since this process started,
    // when BullMQ waits for it without limit) must not hold up the destroy, nor the sweep.
    const jobIds = [jobCatalogue.expiring.jobId({ sandboxId }), ...(source === 'expire-job' ? [] : [jobCatalogue.expire.jobId({ sandboxId })])];
    await settleWithin(deps.redis, () => Promise.all(jobIds.map((jobId) => deps.queue.remove(jobId))), HOUSEKEEPING_TIMEOUT_MS);
  }
  return destroyed ? 'destroyed' : 'already-destroyed';
}
