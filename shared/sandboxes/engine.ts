import { createHash } from 'node:crypto';
import type { Sandbox } from '../db/entities.ts';
import { ApiError } from '../errors.ts';
import { insufficientScope } from '../scopes.ts';
import { isDependencyUnavailable } from '../unavailable.ts';
import { isId, newId } from '../ids.ts';
import { jobCatalogue, type JobPayload, type JobRequest } from '../jobs/catalogue.ts';
import type { NewEvent } from '../repositories/events.ts';
import { withTransition } from '../events/ring.ts';
import { currentMonth } from '../events/usage-period.ts';
import { checkEnvironment } from '../allowlist/index.ts';
import { ImageRefusedError } from '../runtime/index.ts';
import { isPooled } from '../pool/warm-pool.ts';
import { deploymentOf } from '../deployment.ts';
import type { IdempotencyRecord } from '../repositories/idempotency.ts';
import { SNAPSHOT_CORRUPT_MESSAGE } from '../snapshots/restore-error.ts';
import { presentSandbox } from './present.ts';
import { defaultEgress } from '../config.ts';
import { NO_EGRESS, samePolicy, withinEgressMax, type NetworkPolicy } from '../network/policy.ts';
import { egressMode, nameRules } from '../network/rules.ts';
import { PermanentRuntimeError, SandboxGoneError } from '../runtime/types.ts';
import { limitsOf, refuseOverQuota } from './quotas.ts';
import { requireRunning, type InSandboxUse } from './running.ts';
import type { CreateDecision, CreateFacts, SandboxEngineDeps, SandboxEngineOptions } from './ports.ts';

export interface CreateSandboxInput {
  image?: string;
  metadata?: Record<string, string>;
  env?: Record<string, string>;
  /** Its own end, this long after its create; at most the session cap (the default). */
  timeoutSeconds?: number;
  /** A snapshot whose workspace it starts with (and whose image, unless `image` names one). */
  snapshot?: string;
  /** Its workspace snapshotted as it is destroyed (shared/snapshots/snapshots.ts, keepFinal). */
  snapshotOnDestroy?: boolean;
  /** Where its programs may connect; the operator's default when absent. */
  network?: NetworkPolicy;
}

/** What the key asking may do to a sandbox's network. */
export interface NetworkGrant {
  /** The key has network:write: it may set a policy other than the default. */
  mayOpen: boolean;
}

// A first request with a key that has not finished after this long is presumed dead (its API
// process crashed); a retry with the same key then gets the sandbox instead of a 409.
export const IN_PROGRESS_WINDOW_MS = 2 * 60 * 1000;
const WAIT_POLL_MS = 500;
const DESTROY_WAIT_MS = 60_000;

/**
 * The sandbox's rules, from its create to its destruction, in one place: what the API's routes
 * and the workers' processors ask for, given only the narrow world of ports.ts. The state
 * changes themselves, each a conditional update with its events, are transitions.ts'.
 */
export class SandboxEngine {
  readonly #deps: SandboxEngineDeps;
  readonly #options: SandboxEngineOptions;

  constructor(deps: SandboxEngineDeps, options: SandboxEngineOptions) {
    this.#deps = deps;
    this.#options = options;
  }

  /**
   * Checks both quotas and records the new sandbox in one transaction that locks the account row,
   * so concurrent creates through any number of API replicas see each other's sandboxes: the caps
   * hold exactly. Its jobs are queued once that has committed: nothing is created or billed on a
   * refusal, and a job never finds its sandbox's row missing. With `wait`, answers once the
   * sandbox runs or failed (bounded). An Idempotency-Key makes a retry answer the first sandbox.
   */
  async create(
    accountId: string,
    input: CreateSandboxInput,
    options: { idempotencyKey?: string; wait: boolean; network?: NetworkGrant },
  ): Promise<{ sandbox: Sandbox; replayed: boolean }> {
    const { store } = this.#deps;
    const { idempotencyKey } = options;
    const network = this.#admitNetwork(input.network, options.network ?? { mayOpen: false });
    const snapshot = input.snapshot === undefined ? undefined : await this.#deps.snapshots.source(accountId, input.snapshot);
    const image = this.#resolveImage(input.image ?? snapshot?.image);
    this.#refuseTimeoutPastCap(input.timeoutSeconds);
    await this.#refuseProtectedEnv(accountId, input.env);
    // A timeout, a snapshot and a final one count in the request's identity only when given: a key's hash from before them stays the same.
    const identity = [
      image,
      input.metadata ?? {},
      input.env ?? {},
      ...(input.timeoutSeconds === undefined ? [] : [input.timeoutSeconds]),
      ...(snapshot ? [{ snapshot: snapshot.id }] : []),
      ...(input.snapshotOnDestroy ? [{ snapshotOnDestroy: true }] : []),
      ...(input.network ? [{ network: input.network }] : []),
    ];
    const requestHash = createHash('sha256').update(JSON.stringify(identity)).digest('hex');
    // A pooled sandbox runs already, its workspace empty: one from a snapshot is made for it.
    // Pooled sandboxes run with no network: one that needs its own policy is made for it.
    const pooled = !snapshot && egressMode(network) === 'none' && isPooled(this.#options, this.#deps.runtime, image);
    const result = await store.create(
      { accountId, periodStart: currentMonth(this.#deps.clock.now()).start, deployment: deploymentOf(this.#options), claimImage: pooled ? image : undefined, idempotencyKey },
      (facts) => this.#decide(accountId, image, { ...input, network }, facts, idempotencyKey ? { key: idempotencyKey, requestHash } : undefined),
    );

    let sandbox: Sandbox;
    if ('replay' in result) {
      // A replay answers the first request's sandbox as it is now.
      sandbox = await this.findOwn(accountId, result.replay);
    } else if (result.sandbox.status === 'pending') {
      sandbox = result.sandbox;
      // A new sandbox waits for its jobs: without its create job it would never start. Failing
      // that, its quota is released at once, and the request says so.
      const queued = this.#deps.queue.add(sandboxJobs(sandbox, false, this.#deps.clock.now(), this.#options.PADDOCK_SESSION_CAP_SECONDS, snapshot?.id)).then(
        () => undefined,
        (err: unknown) => err ?? new Error('not queued'),
      );
      const [unqueued] = await Promise.all([queued, this.#deps.announcer.announce(result.created)]);
      if (unqueued) {
        await store.markDestroyed(sandbox.id, 'failed', 'The sandbox could not be scheduled.');
        throw unqueued;
      }
    } else {
      sandbox = result.sandbox;
      await this.#claimed(sandbox, result.created);
    }
    if (options.wait && sandbox.status === 'pending') {
      const timeoutMs = (this.#options.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS + 5) * 1000;
      sandbox = await this.#waitFor(sandbox, jobCatalogue.create.jobId({ sandboxId: sandbox.id }), timeoutMs, (s) => s.status !== 'pending');
      if (snapshot && sandbox.status === 'failed' && sandbox.failureMessage?.startsWith(SNAPSHOT_CORRUPT_MESSAGE)) {
        throw new ApiError('snapshot_corrupt', `${sandbox.failureMessage} Sandbox ${sandbox.id} did not start.`);
      }
    }
    if (idempotencyKey) await store.completeIdempotencyKey(accountId, idempotencyKey);
    return { sandbox, replayed: 'replay' in result };
  }

  /**
   * Asks for the account's sandbox's destruction, and answers the sandbox as it now is (with
   * `wait`, once destroyed, bounded): terminating, or as it was when asked for already or
   * destroyed (left as it is); 404 for none. A running one takes one statement, its job queued
   * beside the announcement.
   */
  async destroy(accountId: string, id: string, options: { wait: boolean }): Promise<Sandbox> {
    const { store, announcer } = this.#deps;
    const queueDestroy = (s: Sandbox) =>
      this.#deps.queue.add([{ name: 'destroy', payload: { sandboxId: id, reason: 'user', ...(s.snapshotOnDestroy ? { final: true } : {}) } }]);
    // An id we never issue is unknown without a query (PostgreSQL refuses some strings, such as NUL).
    let sandbox = isId('sbx', id) ? await store.markTerminatingByItsUser(accountId, id) : undefined;
    if (sandbox) {
      await Promise.all([announcer.changed([accountId]), queueDestroy(sandbox)]);
    } else {
      sandbox = await this.findOwn(accountId, id);
      // Asked for already: its job again (one job, by its id), should the first have been lost.
      if (sandbox.state === 'active') await queueDestroy(sandbox);
    }
    if (options.wait && sandbox.state === 'active') {
      sandbox = await this.#waitFor(sandbox, jobCatalogue.destroy.jobId({ sandboxId: id }), DESTROY_WAIT_MS, (s) => s.state === 'destroyed');
    }
    return sandbox;
  }

  /**
   * Gives the account's sandbox its own end, `timeoutSeconds` from now: earlier or later than
   * before, never past createdAt + the session cap (422 timeout_past_cap, with the latest end it
   * may have). The row moves in one conditional update (a destroy, the reaper's too, and a move
   * never both apply); then the reaper's and the warning's delayed jobs for the new moments are
   * queued under ids that carry them, so a retry or a second replica queues nothing twice, and the
   * jobs for the old moments, left or dropped, find the row not due and do nothing. Last, the
   * runtime's own backstop follows where it can (runtime.setExpiresAt: the local init's deadline;
   * a pod's stays at the cap). 409 for a sandbox destroyed or being destroyed.
   */
  async setTimeout(accountId: string, id: string, timeoutSeconds: number): Promise<Sandbox> {
    const sandbox = await this.findOwn(accountId, id);
    refuseEnded(sandbox);
    const now = this.#deps.clock.now();
    const latest = new Date(sandbox.createdAt.getTime() + this.#options.PADDOCK_SESSION_CAP_SECONDS * 1000);
    const expiresAt = new Date(now.getTime() + timeoutSeconds * 1000);
    if (expiresAt > latest) {
      throw new ApiError('timeout_past_cap', `Sandbox ${id} may run until ${latest.toISOString()} at the latest (its session cap).`, {
        extra: { expiresAt: latest.toISOString() },
      });
    }
    const moved = await this.#deps.store.moveEnd(accountId, id, { expiresAt, expiryWarningAt: this.#warningAt(now, expiresAt), now });
    if (!moved) {
      // Destroyed or asked to be, meanwhile.
      refuseEnded(await this.findOwn(accountId, id));
      throw new ApiError('sandbox_not_running', `Sandbox ${id} is terminating; its timeout can no longer be set.`);
    }
    const { queue, announcer } = this.#deps;
    // The account's cached views show the old end until they are marked stale.
    await Promise.all([queue.add(endJobs(moved.sandbox, now)), announcer.changed([accountId])]);
    // The create's jobs and those of the end before this one: obsolete unless they are the new ones.
    const current = new Set(endJobs(moved.sandbox, now).map(jobIdOf));
    const left = [
      jobCatalogue.expire.jobId({ sandboxId: id }),
      jobCatalogue.expire.jobId({ sandboxId: id, at: moved.previous.expiresAt.getTime() }),
      jobCatalogue.expiring.jobId({ sandboxId: id }),
      ...(moved.previous.expiryWarningAt ? [jobCatalogue.expiring.jobId({ sandboxId: id, at: moved.previous.expiryWarningAt.getTime() })] : []),
    ].filter((jobId) => !current.has(jobId));
    await Promise.all([
      queue.remove?.(left).catch((err: unknown) => this.#deps.log.warn({ err, sandboxId: id }, "a moved sandbox's old delayed jobs were not dropped; they find nothing to do")),
      this.#followMovedEnd(accountId, moved.sandbox),
    ]);
    return moved.sandbox;
  }

  /** The caller's sandbox, or 404 exactly as for one that does not exist. */
  async findOwn(accountId: string, id: string): Promise<Sandbox> {
    // An id we never issue is unknown without a query (PostgreSQL refuses some strings, such as NUL).
    const sandbox = isId('sbx', id) ? await this.#deps.store.findOwn(accountId, id) : undefined;
    if (!sandbox) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
    return sandbox;
  }

  /** The caller's sandbox when it runs, for `use` of it: 404 for another account's or an unknown one, else 409. */
  async running(accountId: string, id: string, use: InSandboxUse): Promise<Sandbox> {
    const sandbox = await this.findOwn(accountId, id);
    requireRunning(sandbox, use);
    return sandbox;
  }

  /** Under the account's lock: the replay, or the quotas' verdict and the new sandbox with its events. */
  #decide(
    accountId: string,
    image: string,
    input: CreateSandboxInput,
    facts: CreateFacts,
    idempotency: { key: string; requestHash: string } | undefined,
  ): CreateDecision {
    if (!facts.overrides) throw new ApiError('invalid_credential');
    const replayed = idempotency ? replayOf(facts.replay, idempotency.requestHash, this.#deps.clock.now()) : undefined;
    if (replayed) return { replay: replayed };
    refuseOverQuota(limitsOf(facts.overrides, this.#options), facts.usage);
    const sandbox = this.#newSandbox(accountId, image, input, facts.claimed);
    const events: NewEvent[] = [
      {
        accountId,
        sandboxId: sandbox.id,
        type: 'sandbox.created',
        data: { sandbox: presentSandbox({ ...sandbox, status: 'pending', readyAt: null }) },
        dedupeKey: `sandbox.created:${sandbox.id}`,
      },
    ];
    // A claimed sandbox runs already: both its events, in one statement.
    if (facts.claimed) events.push({ accountId, sandboxId: sandbox.id, type: 'sandbox.running', data: { sandbox: presentSandbox(sandbox) }, dedupeKey: `sandbox.running:${sandbox.id}` });
    return { sandbox, events, idempotency };
  }

  /**
   * A claimed pooled sandbox runs already and is answered at once. Its account's views (its
   * usage) change before the answer, as after any create, and the sandbox's own backstop follows
   * its expiresAt from now on; its jobs and events are queued once the answer is written (their
   * synchronous part runs ahead of it). Should this process die before they are queued, the
   * reaper's sweep still ends it at its cap, warns before, and refills the pool, and the events
   * sweep still delivers its events.
   */
  #claimed(sandbox: Sandbox, created: Parameters<SandboxEngineDeps['announcer']['announce']>[0]): Promise<void> {
    const { queue, announcer, log } = this.#deps;
    const unqueued = (err: unknown) => log.warn({ err, sandboxId: sandbox.id }, "a claimed sandbox's jobs or events were not queued; the sweeps will see to them");
    const answered = Promise.all([announcer.changed([sandbox.accountId]), this.#followExpiry(sandbox)]);
    return answered.then(() => {
      setImmediate(() => void Promise.all([queue.add(sandboxJobs(sandbox, true, this.#deps.clock.now(), this.#options.PADDOCK_SESSION_CAP_SECONDS)), announcer.announce(created)]).catch(unqueued));
    });
  }

  /**
   * Tells the runtime the sandbox's expiresAt, where its own end follows it (the local runtime's
   * init). A failure leaves the deadline it had (pooled with, or the one before a move): the
   * reaper still ends it at expiresAt.
   */
  async #followExpiry(sandbox: Sandbox): Promise<void> {
    await this.#deps.runtime.setExpiresAt?.(sandbox.id, sandbox.expiresAt).catch((err: unknown) =>
      this.#deps.log.warn({ err, sandboxId: sandbox.id }, "could not move a sandbox's own deadline to its expiresAt; the one it had holds"),
    );
  }

  /**
   * The runtime's backstop after a move, where it can follow (#followExpiry). Two moves at once may
   * reach the runtime in either order: each reads the row again once its own is held, and sends
   * the row's end while it differs, so the last one held is the row's (bounded).
   */
  async #followMovedEnd(accountId: string, sandbox: Sandbox): Promise<void> {
    if (!this.#deps.runtime.setExpiresAt || sandbox.status !== 'running') return;
    let current = sandbox;
    for (let round = 0; round < 3; round++) {
      await this.#followExpiry(current);
      const now = await this.#deps.store.findOwn(accountId, sandbox.id);
      if (!now || now.state !== 'active' || now.status !== 'running' || now.expiresAt.getTime() === current.expiresAt.getTime()) return;
      current = now;
    }
  }

  /**
   * Waits (bounded) until the sandbox is `settled`, then answers it as it now is. The account's
   * events, rung right after the worker's commit, carry the sandbox's transitions: one that
   * settles it is the answer, with no read. Otherwise the ring and the job's end say when to look
   * at the row, read again every half second as well, so a message lost with Redis (restarted,
   * or its connection down) costs half a second, not the whole timeout. A failed job or a timeout
   * still ends in answering the row: it says what happened.
   */
  async #waitFor(base: Sandbox, jobId: string, timeoutMs: number, settled: (sandbox: Sandbox) => boolean): Promise<Sandbox> {
    const { clock, store } = this.#deps;
    const deadline = clock.now().getTime() + timeoutMs;
    const { id: sandboxId, accountId } = base;
    const watch = this.#deps.watcher.watch(accountId, sandboxId, jobId);
    try {
      for (;;) {
        const heard = watch.heard();
        if (heard && settled(withTransition(base, heard))) return withTransition(base, heard);
        const jobFinished = watch.jobFinished();
        let sandbox: Sandbox | null | undefined;
        try {
          sandbox = (await store.findOwn(accountId, sandboxId)) ?? null;
        } catch (err) {
          // The database away for a moment: keep waiting; a read at the deadline answers for it.
          if (!isDependencyUnavailable(err) || clock.now().getTime() >= deadline) throw err;
        }
        if (sandbox === null) throw new ApiError('sandbox_not_found', `No sandbox ${sandboxId}.`);
        if (sandbox && (jobFinished || settled(sandbox) || clock.now().getTime() >= deadline)) return sandbox;
        if (!watch.jobFinished() || sandbox === undefined) await watch.next(Math.max(0, Math.min(WAIT_POLL_MS, deadline - clock.now().getTime())));
      }
    } finally {
      watch.release();
    }
  }

  /** The image the sandbox will run, as the runtime that runs it decides; a refusal creates nothing. */
  #resolveImage(requested: string | undefined): string {
    try {
      return this.#deps.runtime.resolveImage(requested);
    } catch (err) {
      if (!(err instanceof ImageRefusedError)) throw err;
      throw new ApiError(err.reason === 'not_allowed' ? 'image_not_allowed' : 'image_not_supported', err.message);
    }
  }

  /**
   * The create-time env reaches every exec: while an allowlist is in force it may not set what
   * decides which code runs (LD_PRELOAD, PATH, BASH_ENV…), as exec's own env may not. An
   * allowlist set later is enforced on the merged environment at every exec (prepareExec).
   */
  async #refuseProtectedEnv(accountId: string, env: Record<string, string> | undefined): Promise<void> {
    if (!env || Object.keys(env).length === 0) return;
    const verdict = checkEnvironment(await this.#deps.store.allowlistCommands(accountId), env);
    if (!verdict.allowed) throw new ApiError('command_not_allowed', verdict.reason, { extra: { variable: verdict.variable } });
  }

  /**
   * The running sandbox's egress becomes `policy`: in the runtime first, then on its row, both
   * while the row is held (shared/repositories/sandboxes.ts, setSandboxNetwork), so what the row
   * says is what the runtime enforces. 409 for a sandbox not running, 404 for none of the account's.
   */
  async setNetwork(accountId: string, id: string, policy: NetworkPolicy, grant: NetworkGrant): Promise<Sandbox> {
    this.#admitNetwork(policy, grant);
    if (!isId('sbx', id)) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
    const set = await this.#deps.store
      .setNetwork(accountId, id, policy, () => this.#deps.runtime.setNetwork(id, policy))
      .catch((err: unknown) => {
        if (err instanceof SandboxGoneError) return 'not_running' as const;
        if (err instanceof PermanentRuntimeError) throw new ApiError('egress_not_permitted', `This deployment cannot give sandboxes network: ${err.message}`);
        throw err;
      });
    if (set === undefined) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
    if (set === 'not_running') throw new ApiError('sandbox_not_running', `Sandbox ${id} is not running: only a running sandbox's network can be set.`);
    await this.#deps.announcer.changed([accountId]);
    return set;
  }

  /**
   * The policy a create or a change gets: the operator's default when none is named. One other
   * than the default needs network:write (403 insufficient_scope), and none may open more than
   * PADDOCK_EGRESS_MAX (403 egress_not_permitted).
   */
  #admitNetwork(asked: NetworkPolicy | undefined, grant: NetworkGrant): NetworkPolicy {
    const fallback: NetworkPolicy = { egress: defaultEgress(this.#options) };
    const policy = asked ?? fallback;
    if (!samePolicy(policy, fallback) && !grant.mayOpen) {
      throw insufficientScope('network:write', 'a network other than the default');
    }
    const max = this.#options.PADDOCK_EGRESS_MAX;
    if (!withinEgressMax(egressMode(policy), max)) {
      throw new ApiError('egress_not_permitted', `This deployment lets a sandbox's egress be at most ${max}.`, { extra: { max } });
    }
    if (!this.#deps.runtime.egressByName && nameRules(policy).length > 0) {
      throw new ApiError('egress_not_permitted', `This deployment's ${this.#deps.runtime.name} runtime takes egress rules by address and range alone, not by domain.`, { extra: { max } });
    }
    return policy;
  }

  /** A create's own timeout past the session cap is not a valid request (400), as the schema's bounds are not. */
  #refuseTimeoutPastCap(timeoutSeconds: number | undefined): void {
    const cap = this.#options.PADDOCK_SESSION_CAP_SECONDS;
    if (timeoutSeconds === undefined || timeoutSeconds <= cap) return;
    const message = `must be at most ${cap} (the session cap)`;
    throw new ApiError('invalid_request', `body.timeoutSeconds: ${message}`, { extra: { errors: [{ location: 'body', field: 'timeoutSeconds', message }] } });
  }

  /** When sandbox.expiring is due for an end at `expiresAt`: PADDOCK_EXPIRY_WARNING_SECONDS before, at once when that has passed; null when warnings are off. */
  #warningAt(now: Date, expiresAt: Date): Date | null {
    const warningSeconds = this.#options.PADDOCK_EXPIRY_WARNING_SECONDS;
    return warningSeconds > 0 ? new Date(Math.max(now.getTime(), expiresAt.getTime() - warningSeconds * 1000)) : null;
  }

  /** The new sandbox: a claimed pooled one runs already, its cap (or its own timeout) starting now. */
  #newSandbox(accountId: string, image: string, input: CreateSandboxInput, claimed: string | undefined): Sandbox {
    const now = this.#deps.clock.now();
    const expiresAt = new Date(now.getTime() + (input.timeoutSeconds ?? this.#options.PADDOCK_SESSION_CAP_SECONDS) * 1000);
    return {
      id: claimed ?? newId('sbx'),
      accountId,
      state: 'active',
      status: claimed ? 'running' : 'pending',
      readyAt: claimed ? now : null,
      image,
      metadata: input.metadata ?? {},
      env: input.env ?? {},
      createdAt: now,
      expiresAt,
      expiryWarningAt: this.#warningAt(now, expiresAt),
      deployment: deploymentOf(this.#options),
      destroyedAt: null,
      destroyReason: null,
      failureMessage: null,
      snapshotOnDestroy: input.snapshotOnDestroy ?? false,
      finalSnapshotId: null,
      network: input.network ?? NO_EGRESS,
      networkRefused: 0,
    };
  }
}

/** The sandbox a first request with this key made, to answer again; none for a key not seen yet. */
export function replayOf(record: IdempotencyRecord | undefined, requestHash: string, now: Date): string | undefined {
  if (!record) return undefined;
  if (record.requestHash !== requestHash) {
    throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body.');
  }
  if (!record.completedAt && now.getTime() - record.createdAt.getTime() < IN_PROGRESS_WINDOW_MS) {
    throw new ApiError('idempotency_conflict', 'A request with this Idempotency-Key is still in progress; retry shortly.', {
      headers: { 'Retry-After': '1' },
    });
  }
  return record.sandboxId;
}

/** 409 for a sandbox destroyed or being destroyed: its end can no longer move. */
function refuseEnded(sandbox: Sandbox): void {
  if (sandbox.state === 'active' && sandbox.status !== 'terminating') return;
  throw new ApiError('sandbox_not_running', `Sandbox ${sandbox.id} is ${sandbox.status}; its timeout can no longer be set.`);
}

/**
 * The reaper's and the warning's delayed jobs for a moved end, each under an id that carries its
 * moment (shared/jobs/catalogue.ts).
 */
function endJobs(sandbox: Sandbox, now: Date): JobRequest[] {
  const jobs: JobRequest[] = [{ name: 'expire', payload: { sandboxId: sandbox.id, at: sandbox.expiresAt.getTime() }, delayMs: sandbox.expiresAt.getTime() - now.getTime() }];
  if (sandbox.expiryWarningAt) {
    jobs.push({ name: 'expiring', payload: { sandboxId: sandbox.id, at: sandbox.expiryWarningAt.getTime() }, delayMs: sandbox.expiryWarningAt.getTime() - now.getTime() });
  }
  return jobs;
}

function jobIdOf(job: JobRequest): string {
  return job.name === 'expire' || job.name === 'expiring' ? jobCatalogue[job.name].jobId(job.payload) : '';
}

/** A new sandbox's jobs, queued in one round trip: a claimed pooled one runs already, and its pool is refilled instead of a create. */
export function sandboxJobs(sandbox: Sandbox, claimed: boolean, now: Date, capSeconds: number, snapshotId?: string): JobRequest[] {
  const jobs: JobRequest[] = [
    claimed ? { name: 'refill', payload: { image: sandbox.image } } : { name: 'create', payload: createPayload(sandbox, capSeconds, snapshotId) },
    { name: 'expire', payload: { sandboxId: sandbox.id }, delayMs: sandbox.expiresAt.getTime() - now.getTime() },
  ];
  if (sandbox.expiryWarningAt) jobs.push({ name: 'expiring', payload: { sandboxId: sandbox.id }, delayMs: sandbox.expiryWarningAt.getTime() - now.getTime() });
  return jobs;
}

function createPayload(sandbox: Sandbox, capSeconds: number, snapshotId: string | undefined): JobPayload<'create'> {
  const capAt = new Date(sandbox.createdAt.getTime() + capSeconds * 1000);
  return {
    ...(capAt.getTime() === sandbox.expiresAt.getTime() ? {} : { capAt: capAt.toISOString() }),
    ...(snapshotId ? { snapshotId } : {}),
    ...(sandbox.snapshotOnDestroy ? { snapshotOnDestroy: true } : {}),
    ...(egressMode(sandbox.network) === 'none' ? {} : { network: sandbox.network }),
    sandboxId: sandbox.id,
    image: sandbox.image,
    expiresAt: sandbox.expiresAt.toISOString(),
    accountId: sandbox.accountId,
    createdAt: sandbox.createdAt.toISOString(),
    metadata: sandbox.metadata,
  };
}
