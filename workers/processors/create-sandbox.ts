import { UnrecoverableError, type Job } from 'bullmq';
import { ormPool } from '../../shared/db/orm.ts';
import { findSandbox } from '../../shared/repositories/sandboxes.ts';
import { parsePayload, type JobPayload } from '../../shared/jobs/catalogue.ts';
import { markDestroyed, markRunning, type PendingSandbox } from '../../shared/sandboxes/transitions.ts';
import { PermanentRuntimeError } from '../../shared/runtime/types.ts';
import type { WorkerDeps } from '../context.ts';

/**
 * Makes the runtime sandbox for a pending row. Safe to run again after a crash at any point:
 * the runtime's create is idempotent, and the row moves to running only from pending.
 */
export async function createSandbox(job: Job, deps: WorkerDeps): Promise<string> {
  const payload = parsePayload('create', job.data);
  const { sandboxId, image, expiresAt } = payload;
  const em = deps.orm.em.fork();
  const pool = await ormPool(em);
  let pending = freshFacts(job, payload);
  if (!pending) {
    const row = await findSandbox(pool, sandboxId);
    if (!row || row.state === 'destroyed' || row.status === 'terminating') {
      // Destroyed before it was made; make sure nothing of it lingers in the runtime.
      await deps.runtime.destroy(sandboxId);
      return 'skipped';
    }
    if (row.status === 'running') return 'running';
    pending = { id: sandboxId, account_id: row.accountId, image, metadata: row.metadata, created_at: row.createdAt, expires_at: new Date(expiresAt) };
  }

  const readyDeadline = pending.created_at.getTime() + deps.config.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS * 1000;
  if (Date.now() >= readyDeadline) {
    // Picked up too late (a backlog, a dead worker): starting it now would only be reaped.
    await failSandbox(deps, sandboxId, notReadyMessage(deps));
    return 'failed';
  }
  const timeoutMs = Math.max(1000, readyDeadline - Date.now());
  try {
    await deps.runtime.create(
      // The cap runs from the create, as the API set it: a runtime that ends sandboxes by itself
      // (Kubernetes' activeDeadlineSeconds) gets what is left of it, not a whole cap afresh.
      { id: sandboxId, accountId: pending.account_id, image, capSeconds: Math.max(1, Math.ceil((Date.parse(expiresAt) - Date.now()) / 1000)) },
      { timeoutMs },
    );
  } catch (err) {
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1) || Date.now() >= readyDeadline;
    if (err instanceof PermanentRuntimeError || lastAttempt) {
      await failSandbox(deps, sandboxId, (err as Error).message);
      if (err instanceof PermanentRuntimeError) throw new UnrecoverableError(err.message);
    }
    throw err;
  }
  // The job was queued once its create had committed: the row is there, and a pending one moves
  // to running here, once.
  if (await markRunning(em, pending, deps.events)) return 'running';
  const now = await findSandbox(pool, sandboxId);
  // Running already (the same job, taken for stalled, ran twice at once), or a destroy won the
  // race while the runtime was creating: only the latter is undone.
  if (now?.state === 'active' && now.status === 'running') return 'running';
  await deps.runtime.destroy(sandboxId);
  return 'destroyed-meanwhile';
}

// A job taken this soon after its row was written is a first run, not a retry's or a backlog's,
// and it skips the read of the row: a destroy that overtook it by so little is rare, and
// markRunning's conditional update still sees it after the create, which is then undone. A later
// job reads the row first, so that it makes nothing for a sandbox ended meanwhile.
const FRESH_MS = 1000;

/** The row's facts as the job carries them, when the job is fresh; undefined when the row is to be read first. */
function freshFacts(job: Job, payload: JobPayload<'create'>): PendingSandbox | undefined {
  const { sandboxId, image, expiresAt, accountId, createdAt, metadata } = payload;
  if (!accountId || !createdAt || !metadata || job.attemptsStarted > 1) return undefined;
  const born = new Date(createdAt);
  if (Date.now() - born.getTime() > FRESH_MS) return undefined;
  return { id: sandboxId, account_id: accountId, image, metadata, created_at: born, expires_at: new Date(expiresAt) };
}

/** The sandbox can never run: free its quota at once and clean up whatever the runtime made. */
export async function failSandbox(deps: WorkerDeps, sandboxId: string, message: string): Promise<void> {
  await deps.runtime.destroy(sandboxId).catch((err: unknown) => deps.log.warn({ err, sandboxId }, 'cleanup of failed sandbox failed'));
  if (await markDestroyed(deps.orm.em.fork(), sandboxId, 'failed', message, deps.events)) {
    deps.metrics.sandboxesDestroyed.inc({ reason: 'failed' });
  }
}

export function notReadyMessage(deps: WorkerDeps): string {
  return `The sandbox did not become ready within ${deps.config.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS} s.`;
}
