import type { Config } from '../config.ts';
import type { DestroyReason, Sandbox } from '../db/entities.ts';
import type { Announcer } from '../events/announce.ts';
import type { NewEvent } from '../repositories/events.ts';
import type { RecordedEvent } from '../events/types.ts';
import type { SandboxTransition } from '../events/ring.ts';
import type { JobRequest } from '../jobs/catalogue.ts';
import type { Logger } from '../logger.ts';
import type { LimitOverrides, Usage } from '../repositories/accounts.ts';
import type { IdempotencyRecord } from '../repositories/idempotency.ts';
import type { MovedEnd } from '../repositories/sandboxes.ts';
import type { SandboxRuntime } from '../runtime/types.ts';
import type { NetworkPolicy } from '../network/policy.ts';

// What the sandbox engine (engine.ts) needs of the world, and nothing more: the API and the
// workers build these where they are assembled (api/app.ts, workers/workers.ts); the engine's
// unit tests give it in-memory ones.

/** What the create's transaction read under its account's lock. */
export interface CreateFacts {
  /** The account's own limits; undefined when the account is gone. */
  overrides: LimitOverrides | undefined;
  usage: Usage;
  /** The pooled sandbox claimed for it, if one was asked for and ready. */
  claimed: string | undefined;
  /** What a first request with the same Idempotency-Key recorded. */
  replay: IdempotencyRecord | undefined;
}

/** What the engine decided under the lock: answer an earlier sandbox again, or write a new one. */
export type CreateDecision =
  | { replay: string }
  | { sandbox: Sandbox; events: NewEvent[]; idempotency?: { key: string; requestHash: string } };

export type CreateResult = { replay: string } | { sandbox: Sandbox; created: (RecordedEvent | undefined)[] };

export interface CreateRequest {
  accountId: string;
  periodStart: Date;
  /** The deployment whose warm pool is claimed from. */
  deployment: string;
  /** The image whose warm pool to claim from, when it has one. */
  claimImage?: string;
  idempotencyKey?: string;
}

/** Where sandboxes are kept: every read and change of the sandbox aggregate the engine makes. */
export interface SandboxStore {
  /** The commands of the account's allowlist (empty: none in force). */
  allowlistCommands(accountId: string): Promise<string[]>;
  /**
   * One transaction holding the account's lock: reads the facts, lets `decide` answer (a throw
   * rolls back, so a claimed pooled sandbox goes back), then writes what it decided and commits.
   */
  create(request: CreateRequest, decide: (facts: CreateFacts) => CreateDecision): Promise<CreateResult>;
  completeIdempotencyKey(accountId: string, key: string): Promise<void>;
  /** The account's sandbox, or undefined (another account's is not told apart from none). */
  findOwn(accountId: string, id: string): Promise<Sandbox | undefined>;
  /** Moves the account's sandbox's end while it is active and not being destroyed; undefined where it did not apply. */
  moveEnd(accountId: string, id: string, end: { expiresAt: Date; expiryWarningAt: Date | null; now: Date }): Promise<MovedEnd | undefined>;
  /**
   * The account's running sandbox's egress set, `apply` (the runtime's change) run while its row is
   * held; `not_running` (neither applied) for one not running, undefined for none of the account's.
   */
  setNetwork(accountId: string, id: string, policy: NetworkPolicy, apply: () => Promise<void>): Promise<Sandbox | 'not_running' | undefined>;
  /** → terminating at its user's request, when active and not asked for yet; the sandbox as now, else undefined. */
  markTerminatingByItsUser(accountId: string, id: string): Promise<Sandbox | undefined>;
  /** active → destroyed, its events recorded and announced; false when it was not active. */
  markDestroyed(id: string, reason: DestroyReason, failureMessage?: string): Promise<boolean>;
}

/** Where the sandbox jobs go. */
export interface SandboxQueue {
  add(jobs: readonly JobRequest[]): Promise<unknown>;
  /** Drops the jobs of these ids that are still waiting (housekeeping: a job left behind finds nothing to do). */
  remove?(jobIds: readonly string[]): Promise<unknown>;
}

/** A wait on one sandbox: what this process hears of its transitions and of its job's end. */
export interface SandboxWatch {
  /** The furthest transition of the sandbox heard since the watch began. */
  heard(): SandboxTransition | undefined;
  /** Whether the job waited for has ended (done or failed). */
  jobFinished(): boolean;
  /** Resolves when something may have changed, or after `ms` anyway. */
  next(ms: number): Promise<void>;
  release(): void;
}

export interface SandboxWatcher {
  watch(accountId: string, sandboxId: string, jobId: string): SandboxWatch;
}

export interface Clock {
  now(): Date;
}

/** The settings the engine obeys: a slice of the configuration. */
export type SandboxEngineOptions = Pick<
  Config,
  | 'PADDOCK_SESSION_CAP_SECONDS'
  | 'PADDOCK_EXPIRY_WARNING_SECONDS'
  | 'PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS'
  | 'PADDOCK_QUOTA_CONCURRENT_SANDBOXES'
  | 'PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS'
  | 'PADDOCK_WARM_POOL_SIZE'
  | 'PADDOCK_WARM_POOL_IMAGES'
  | 'PADDOCK_REDIS_PREFIX'
  | 'PADDOCK_DEFAULT_EGRESS'
  | 'PADDOCK_EGRESS_MAX'
  | 'PADDOCK_LOCAL_NETWORK'
>;

export interface SandboxEngineDeps {
  store: SandboxStore;
  queue: SandboxQueue;
  announcer: Announcer;
  runtime: Pick<SandboxRuntime, 'name' | 'resolveImage' | 'defaultImage' | 'egressByName' | 'setExpiresAt' | 'setNetwork'>;
  watcher: SandboxWatcher;
  clock: Clock;
  log: Pick<Logger, 'warn'>;
  /** The account's snapshot a create starts from: ready, or an ApiError says why not. */
  snapshots: { source(accountId: string, snapshotId: string): Promise<{ id: string; image: string }> };
}
