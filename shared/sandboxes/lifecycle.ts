import { NO_EGRESS } from '../network/policy.ts';
import type { Config } from '../config.ts';
import type { DestroyReason, Sandbox } from '../db/entities.ts';
import type { JobPayload } from '../jobs/catalogue.ts';
import type { Logger } from '../logger.ts';
import { PermanentRuntimeError, type SandboxRuntime } from '../runtime/types.ts';
import type { SandboxRow } from './snapshot.ts';
import type { Clock } from './ports.ts';
import type { DestroyedEnd, PendingSandbox } from './transitions.ts';
import { SnapshotRestoreError } from '../snapshots/restore-error.ts';
import type { FinalSnapshot } from '../snapshots/snapshots.ts';

// The workers' half of a sandbox's life: its start in the runtime once its create has committed,
// its failure, its end, and the warning before its cap. The API's half (the create, the destroy's
// request, the waits) is engine.ts'.

/** The state changes the workers make, and the one read they need (transitions.ts). */
export interface LifecycleStore {
  find(id: string): Promise<Sandbox | undefined>;
  markRunning(pending: PendingSandbox): Promise<boolean>;
  /** True when the sandbox is now being destroyed; with `dueBy`, only one that expires by then is marked. */
  markTerminating(id: string, reason: DestroyReason, dueBy?: Date): Promise<boolean>;
  /** The row as destroyed, or undefined where it was not active. */
  markDestroyed(id: string, reason: DestroyReason, end?: DestroyedEnd): Promise<SandboxRow | undefined>;
  markExpiring(id: string): Promise<boolean>;
}

export interface SandboxLifecycleDeps {
  store: LifecycleStore;
  runtime: Pick<SandboxRuntime, 'create' | 'destroy' | 'setExpiresAt'>;
  clock: Clock;
  log: Pick<Logger, 'warn'>;
  /** Told of each sandbox a failed start destroyed (the workers count them). */
  onFailed?: () => void;
  /** A workspace from a snapshot before the sandbox runs, and into one before it is destroyed (shared/snapshots/). */
  workspaces: {
    restore(accountId: string, sandboxId: string, snapshotId: string, timeoutMs: number): Promise<void>;
    /** Never throws. */
    keepFinal(accountId: string, sandboxId: string): Promise<FinalSnapshot>;
  };
}

export type SandboxLifecycleOptions = Pick<Config, 'PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS'>;

/** Which try of its job a start is: the last one fails the sandbox rather than leave it to a retry. */
export interface StartAttempt {
  /** How many runs of the job began, this one included. */
  started: number;
  /** How many ended in failure before this one. */
  failed: number;
  /** How many it may have in all. */
  allowed: number;
}

export type StartOutcome = 'running' | 'skipped' | 'failed' | 'destroyed-meanwhile';

// A job taken this soon after its row was written is a first run, not a retry's or a backlog's,
// and it skips the read of the row: a destroy that overtook it by so little is rare, and
// markRunning's conditional update still sees it after the create, which is then undone. A later
// job reads the row first, so that it makes nothing for a sandbox ended meanwhile.
const FRESH_MS = 1000;
const EXPIRY_LEEWAY_MS = 1000;

export class SandboxLifecycle {
  readonly #deps: SandboxLifecycleDeps;
  readonly #options: SandboxLifecycleOptions;

  constructor(deps: SandboxLifecycleDeps, options: SandboxLifecycleOptions) {
    this.#deps = deps;
    this.#options = options;
  }

  /**
   * Makes the runtime sandbox for a pending row. Safe to run again after a crash at any point:
   * the runtime's create is idempotent, and the row moves to running only from pending. A
   * PermanentRuntimeError is thrown on once the sandbox is failed: no retry can help it.
   */
  async start(payload: JobPayload<'create'>, attempt: StartAttempt): Promise<StartOutcome> {
    const { store, runtime, clock } = this.#deps;
    const { sandboxId, image, expiresAt } = payload;
    let pending = freshFacts(payload, attempt, clock.now());
    if (!pending) {
      const row = await store.find(sandboxId);
      if (!row || row.state === 'destroyed' || row.status === 'terminating') {
        // Destroyed before it was made; make sure nothing of it lingers in the runtime.
        await runtime.destroy(sandboxId);
        return 'skipped';
      }
      if (row.status === 'running') return 'running';
      pending = { id: sandboxId, account_id: row.accountId, image, metadata: row.metadata, created_at: row.createdAt, expires_at: new Date(expiresAt), snapshot_on_destroy: row.snapshotOnDestroy, network: row.network };
    }

    const readyDeadline = pending.created_at.getTime() + this.#options.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS * 1000;
    if (clock.now().getTime() >= readyDeadline) {
      // Picked up too late (a backlog, a dead worker): starting it now would only be reaped.
      await this.fail(sandboxId, this.notReadyMessage());
      return 'failed';
    }
    const timeoutMs = Math.max(1000, readyDeadline - clock.now().getTime());
    try {
      await runtime.create(
        // The cap runs from the create, as the API set it: a runtime that ends sandboxes by itself
        // (Kubernetes' activeDeadlineSeconds) gets what is left of it, not a whole cap afresh.
        // A sandbox with its own timeout gets the cap's (capAt): its end may move later again.
        {
          id: sandboxId,
          accountId: pending.account_id,
          image,
          capSeconds: Math.max(1, Math.ceil((Date.parse(payload.capAt ?? expiresAt) - clock.now().getTime()) / 1000)),
          network: pending.network,
        },
        { timeoutMs },
      );
      // A retry restores again over what an earlier try left: tar overwrites.
      if (payload.snapshotId) await this.#deps.workspaces.restore(pending.account_id, sandboxId, payload.snapshotId, Math.max(1000, readyDeadline - clock.now().getTime()));
    } catch (err) {
      const lastAttempt = attempt.failed + 1 >= attempt.allowed || clock.now().getTime() >= readyDeadline;
      if (err instanceof SnapshotRestoreError) {
        await this.fail(sandboxId, err.message);
        throw new PermanentRuntimeError(err.message);
      }
      if (err instanceof PermanentRuntimeError || lastAttempt) await this.fail(sandboxId, (err as Error).message);
      throw err;
    }
    // The job was queued once its create had committed: the row is there, and a pending one moves
    // to running here, once.
    if (await store.markRunning(pending)) {
      if (payload.capAt) await this.#followOwnEnd(sandboxId);
      return 'running';
    }
    const now = await store.find(sandboxId);
    // Running already (the same job, taken for stalled, ran twice at once), or a destroy won the
    // race while the runtime was creating: only the latter is undone.
    if (now?.state === 'active' && now.status === 'running') return 'running';
    await runtime.destroy(sandboxId);
    return 'destroyed-meanwhile';
  }

  /**
   * A runtime whose backstop can follow the sandbox's end (the local init's deadline) is told its
   * own, as the row has it now (it may have moved while pending); a failure leaves the cap's.
   */
  async #followOwnEnd(sandboxId: string): Promise<void> {
    const { runtime, store, log } = this.#deps;
    if (!runtime.setExpiresAt) return;
    try {
      const row = await store.find(sandboxId);
      if (row?.state === 'active') await runtime.setExpiresAt(sandboxId, row.expiresAt);
    } catch (err) {
      log.warn({ err, sandboxId }, "could not move a sandbox's own deadline to its expiresAt; the cap's holds");
    }
  }

  /** The sandbox can never run: its quota is freed at once and whatever the runtime made is cleaned up. True when this failed it. */
  async fail(sandboxId: string, message: string): Promise<boolean> {
    await this.#deps.runtime.destroy(sandboxId).catch((err: unknown) => this.#deps.log.warn({ err, sandboxId }, 'cleanup of failed sandbox failed'));
    if (!(await this.#deps.store.markDestroyed(sandboxId, 'failed', { failureMessage: message }))) return false;
    this.#deps.onFailed?.();
    return true;
  }

  notReadyMessage(): string {
    return `The sandbox did not become ready within ${this.#options.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS} s.`;
  }

  /**
   * Kills the runtime sandbox, then records it destroyed: the row as destroyed, undefined when it
   * was destroyed already (it is still removed from the runtime, in case a crash left it there),
   * 'unknown' for none, 'not-due' for one that expires later (its end moved: engine.ts, setTimeout).
   * A sandbox created with snapshotOnDestroy has its workspace snapshotted first (`final`: the
   * row's word, which a user's destroy carries in its job); 'elsewhere' while another ender (the
   * sweep, a retried job) copies it, whose sandbox it is to destroy after.
   */
  async end(sandboxId: string, reason: DestroyReason, known: { final?: boolean } = {}): Promise<SandboxRow | 'unknown' | 'not-due' | 'elsewhere' | undefined> {
    const { store, runtime, clock } = this.#deps;
    let final = known.final === true && reason === 'user';
    let accountId: string | undefined;
    // Only a user's DELETE queues a destroy for `user`, and it marked the sandbox terminating first
    // (engine.ts, destroy): nothing to read or mark, and the runtime's destroy starts a round trip
    // sooner; unless its job says a final snapshot is due, which needs the account.
    if (reason !== 'user' || final) {
      const row = await store.find(sandboxId);
      if (!row) return 'unknown';
      // Once: a retry of the destroy finds the one its first try kept, or is copying (keepFinal).
      final = row.snapshotOnDestroy && row.state === 'active' && (row.destroyReason ?? reason) !== 'failed';
      accountId = row.accountId;
      // One asked for already keeps its first reason.
      if (row.state === 'active' && row.status !== 'terminating') {
        // An expiry is checked against the row, in the update itself: a move later that commits
        // first wins. A second's leeway for a delayed job promoted by a clock a little ahead.
        const dueBy = reason === 'expired' ? new Date(clock.now().getTime() + EXPIRY_LEEWAY_MS) : undefined;
        if (dueBy && row.expiresAt > dueBy) return 'not-due';
        if (!(await store.markTerminating(sandboxId, reason, dueBy)) && dueBy) return 'not-due';
      }
    }
    const kept = final && accountId ? await this.#deps.workspaces.keepFinal(accountId, sandboxId) : undefined;
    if (kept?.outcome === 'elsewhere') return 'elsewhere';
    await runtime.destroy(sandboxId);
    return store.markDestroyed(sandboxId, reason, { finalSnapshotId: kept?.snapshotId });
  }

  /** Records sandbox.expiring once for an active sandbox whose cap is near. */
  warnExpiring(sandboxId: string): Promise<boolean> {
    return this.#deps.store.markExpiring(sandboxId);
  }
}

/** The row's facts as the job carries them, when the job is fresh; undefined when the row is to be read first. */
function freshFacts(payload: JobPayload<'create'>, attempt: StartAttempt, now: Date): PendingSandbox | undefined {
  const { sandboxId, image, expiresAt, accountId, createdAt, metadata, snapshotOnDestroy, network } = payload;
  if (!accountId || !createdAt || !metadata || attempt.started > 1) return undefined;
  const born = new Date(createdAt);
  if (now.getTime() - born.getTime() > FRESH_MS) return undefined;
  return { id: sandboxId, account_id: accountId, image, metadata, created_at: born, expires_at: new Date(expiresAt), snapshot_on_destroy: snapshotOnDestroy ?? false, network: network ?? NO_EGRESS };
}
