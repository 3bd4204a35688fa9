import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { ApiError } from '../../shared/errors.ts';
import { isDependencyUnavailable } from '../../shared/unavailable.ts';
import type { Sandbox } from '../../shared/db/entities.ts';
import { isId, newId } from '../../shared/ids.ts';
import { enqueue, enqueueAll, jobCatalogue, type JobPayload, type JobRequest } from '../../shared/jobs/catalogue.ts';
import { markDestroyed, markTerminatingByItsUser } from '../../shared/sandboxes/transitions.ts';
import { eventsStatement, recordedFrom, type NewEvent } from '../../shared/events/record.ts';
import { presentSandbox, type PresentedSandbox } from '../../shared/sandboxes/present.ts';
import { withTransition } from '../../shared/events/ring.ts';
import { ImageRefusedError } from '../../shared/runtime/index.ts';
import { isPooled } from '../../shared/pool/warm-pool.ts';
import { claimedFrom, claimWarmStatement } from '../../shared/repositories/warm-pool.ts';
import { inBatchedTransaction, type Rows, type Statement } from '../../shared/db/batch.ts';
import { deploymentOf } from '../../shared/deployment.ts';
import type { AppDeps } from '../context.ts';
import { checkEnvironment } from '../../shared/allowlist/index.ts';
import { currentPeriod, limitsOf } from './account-usage.ts';
import { lockAccountStatement, overridesFrom, usageFrom, usageStatement, type Usage } from '../../shared/repositories/accounts.ts';
import { getAllowlist, type Allowlist } from '../../shared/repositories/policy.ts';
import * as sandboxes from '../../shared/repositories/sandboxes.ts';
import type { SandboxPage } from '../../shared/repositories/sandboxes.ts';
import type { OpenedSecrets } from './opened-secrets.ts';
import { openSecrets } from './secrets.ts';

export type { SandboxPage };

export interface CreateSandboxInput {
  image?: string;
  metadata?: Record<string, string>;
  env?: Record<string, string>;
}

// A first request with a key that has not finished after this long is presumed dead (its API
// process crashed); a retry with the same key then gets the sandbox instead of a 409.
const IN_PROGRESS_WINDOW_MS = 2 * 60 * 1000;


/**
 * Checks both quotas and records the new sandbox in one transaction that locks the account row,
 * so concurrent creates through any number of API replicas see each other's sandboxes: the caps
 * hold exactly. The jobs are enqueued once the quotas have held; nothing is created or billed on a
 * refusal.
 */
export async function createSandbox(
  deps: AppDeps,
  em: EntityManager,
  accountId: string,
  input: CreateSandboxInput,
  idempotencyKey: string | undefined,
): Promise<{ sandbox: Sandbox; replayed: boolean }> {
  const image = resolveImage(deps, input.image);
  await refuseProtectedEnv(deps.pg, accountId, input.env);
  const requestHash = createHash('sha256').update(JSON.stringify([image, input.metadata ?? {}, input.env ?? {}])).digest('hex');

  // Settles to the error of the enqueue, if it failed.
  let queued: Promise<unknown> = Promise.resolve(undefined);
  // Two round trips: the lock with everything read under it, then the writes with the commit.
  const outcome = await inBatchedTransaction(em, async (tx) => {
    const pooled = isPooled(deps.config, deps.runtime, image);
    const [locked, usage, ...rest] = await tx.send([
      lockAccountStatement(accountId),
      usageStatement(accountId, currentPeriod().start),
      // From the warm pool when it has one ready: running now, its cap starting now. A refused
      // create rolls back, which puts it back.
      ...(pooled ? [claimWarmStatement(deploymentOf(deps.config), image)] : []),
      ...(idempotencyKey ? [replayStatement(accountId, idempotencyKey)] : []),
    ]);
    const claim = pooled ? rest.shift() : undefined;
    const overrides = overridesFrom(locked ?? []);
    if (!overrides) throw new ApiError('invalid_credential');
    const replayed = idempotencyKey ? replayOf(rest.shift() ?? [], requestHash) : undefined;
    if (replayed) {
      await tx.rollback();
      return { sandboxId: replayed, replayed: true, created: undefined, sandbox: undefined };
    }
    refuseOverQuota(limitsOf(overrides, deps.config), usageFrom(usage ?? []));
    const warm = claim && claimedFrom(claim);
    const sandbox = newSandboxRow(deps, accountId, image, input, warm);
    // A new sandbox's jobs go out beside the commit, not after it: the quotas held, and a fresh
    // create job reads no row before the runtime's create (workers/processors/create-sandbox.ts), so
    // the worker starts a round trip sooner. Should the commit fail, the job finds no row once its
    // create is done, and undoes it.
    if (!warm) queued = enqueueAll(deps.queue, sandboxJobs(sandbox, false)).then(() => undefined, (err: unknown) => err ?? new Error('not queued'));
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
    if (warm) events.push({ accountId, sandboxId: sandbox.id, type: 'sandbox.running', data: { sandbox: presentSandbox(sandbox) }, dedupeKey: `sandbox.running:${sandbox.id}` });
    // The account's row is held FOR UPDATE since the first batch (the events' order needs it).
    // The sandbox's row and its events: one statement.
    const { statement, ids } = eventsStatement(events, sandboxes.insertSandboxStatement(sandbox));
    const [eventRows] = await tx.commitWith([
      statement,
      ...(idempotencyKey
        ? [{ sql: 'insert into idempotency_keys (account_id, key, request_hash, sandbox_id) values (?, ?, ?, ?)', params: [accountId, idempotencyKey, requestHash, sandbox.id] }]
        : []),
    ]);
    const created = recordedFrom(ids, eventRows);
    return { sandboxId: sandbox.id, replayed: false, created, warm: warm !== undefined, sandbox };
  });

  // A replay answers the first request's sandbox as it is now; a new one is the row just written.
  const sandbox = outcome.sandbox ?? (await findOwnSandbox(deps.pg, accountId, outcome.sandboxId));
  if (!outcome.replayed && !outcome.warm) {
    // A new sandbox waits for its jobs: without its create job it would never start. Failing that,
    // its quota is released at once, and the request says so.
    const [unqueued] = await Promise.all([queued, deps.events.announce(outcome.created ?? [])]);
    if (unqueued) {
      await markDestroyed(em, sandbox.id, 'failed', 'The sandbox could not be scheduled.', deps.events);
      throw unqueued;
    }
  } else if (!outcome.replayed) {
    // Its account's views (its usage) change before the answer, as after any create; and the
    // sandbox's own backstop, set when it was pooled for the longest wait in the pool and a whole
    // session after it, follows its expiresAt from now on.
    await Promise.all([deps.events.changed([accountId]), followExpiry(deps, sandbox)]);
    // A claimed one runs already and is answered at once, its jobs and events queued once the
    // answer is written (their synchronous part, the scripts and payloads, runs ahead of it in the
    // microtasks before it). Should this process die before they are queued, the reaper's sweep
    // still ends it at its cap, warns before, and refills the pool, and the events sweep still
    // delivers its events.
    const unqueued = (err: unknown) => deps.log.warn({ err, sandboxId: sandbox.id }, "a claimed sandbox's jobs or events were not queued; the sweeps will see to them");
    setImmediate(() => void Promise.all([enqueueAll(deps.queue, sandboxJobs(sandbox, true)), deps.events.announce(outcome.created ?? [])]).catch(unqueued));
  }
  return { sandbox, replayed: outcome.replayed };
}

/**
 * Tells the runtime the sandbox's expiresAt, where its own end follows it (the local runtime's
 * init). A failure leaves the longer deadline the sandbox was made with: the reaper still ends it
 * at expiresAt.
 */
async function followExpiry(deps: AppDeps, sandbox: Sandbox): Promise<void> {
  await deps.runtime.setExpiresAt?.(sandbox.id, sandbox.expiresAt).catch((err: unknown) =>
    deps.log.warn({ err, sandboxId: sandbox.id }, "could not move a claimed sandbox's own deadline to its expiresAt; the one it was pooled with holds"),
  );
}

/** The image the sandbox will run, as the runtime that runs it decides; a refusal creates nothing. */
function resolveImage(deps: AppDeps, requested: string | undefined): string {
  try {
    return deps.runtime.resolveImage(requested);
  } catch (err) {
    if (!(err instanceof ImageRefusedError)) throw err;
    throw new ApiError(err.reason === 'not_allowed' ? 'image_not_allowed' : 'image_not_supported', err.message);
  }
}

function replayStatement(accountId: string, key: string): Statement {
  return { sql: 'select request_hash, sandbox_id, completed_at, created_at from idempotency_keys where account_id = ? and key = ?', params: [accountId, key] };
}

/** The sandbox a first request with this key made, to answer again; none for a key not seen yet. */
function replayOf(rows: Rows, requestHash: string): string | undefined {
  const row = rows[0] as { request_hash: string; sandbox_id: string; completed_at: Date | null; created_at: Date } | undefined;
  if (!row) return undefined;
  if (row.request_hash !== requestHash) {
    throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body.');
  }
  if (!row.completed_at && Date.now() - new Date(row.created_at).getTime() < IN_PROGRESS_WINDOW_MS) {
    throw new ApiError('idempotency_conflict', 'A request with this Idempotency-Key is still in progress; retry shortly.', {
      headers: { 'Retry-After': '1' },
    });
  }
  return row.sandbox_id;
}

function refuseOverQuota(limit: ReturnType<typeof limitsOf>, { active, hours: used }: Usage): void {
  if (active >= limit.concurrentSandboxes) {
    throw new ApiError(
      'concurrent_sandbox_limit_reached',
      `${active} of ${limit.concurrentSandboxes} concurrent sandboxes are active; destroy one first.`,
      { extra: { active, limit: limit.concurrentSandboxes } },
    );
  }
  if (used >= limit.monthlySandboxHours) {
    throw new ApiError(
      'monthly_usage_limit_reached',
      `${used.toFixed(2)} of ${limit.monthlySandboxHours} sandbox-hours are used this month.`,
      { extra: { used: Math.round(used * 10_000) / 10_000, limit: limit.monthlySandboxHours } },
    );
  }
}

/** The new sandbox's row: a claimed pooled one runs already, its cap starting now. */
function newSandboxRow(deps: AppDeps, accountId: string, image: string, input: CreateSandboxInput, warm: string | undefined): Sandbox {
  const now = new Date();
  const expiresAt = new Date(now.getTime() + deps.config.PADDOCK_SESSION_CAP_SECONDS * 1000);
  const warningSeconds = deps.config.PADDOCK_EXPIRY_WARNING_SECONDS;
  return {
    id: warm ?? newId('sbx'),
    accountId,
    state: 'active',
    status: warm ? 'running' : 'pending',
    readyAt: warm ? now : null,
    image,
    metadata: input.metadata ?? {},
    env: input.env ?? {},
    createdAt: now,
    expiresAt,
    expiryWarningAt: warningSeconds > 0 ? new Date(Math.max(now.getTime(), expiresAt.getTime() - warningSeconds * 1000)) : null,
    deployment: deploymentOf(deps.config),
    destroyedAt: null,
    destroyReason: null,
    failureMessage: null,
  };
}

/** A new sandbox's jobs, enqueued in one round trip: a claimed pooled one runs already, and its pool is refilled instead of a create. */
function sandboxJobs(sandbox: Sandbox, warm: boolean): JobRequest[] {
  const jobs: JobRequest[] = [
    warm ? { name: 'refill', payload: { image: sandbox.image } } : { name: 'create', payload: createPayload(sandbox) },
    { name: 'expire', payload: { sandboxId: sandbox.id }, delayMs: sandbox.expiresAt.getTime() - Date.now() },
  ];
  if (sandbox.expiryWarningAt) jobs.push({ name: 'expiring', payload: { sandboxId: sandbox.id }, delayMs: sandbox.expiryWarningAt.getTime() - Date.now() });
  return jobs;
}

function createPayload(sandbox: Sandbox): JobPayload<'create'> {
  return {
    sandboxId: sandbox.id,
    image: sandbox.image,
    expiresAt: sandbox.expiresAt.toISOString(),
    accountId: sandbox.accountId,
    createdAt: sandbox.createdAt.toISOString(),
    metadata: sandbox.metadata,
  };
}

/** Marks the end of the first request with an idempotency key: retries now get its sandbox. */
export async function completeIdempotencyKey(em: EntityManager, accountId: string, key: string): Promise<void> {
  await em.execute('update idempotency_keys set completed_at = now() where account_id = ? and key = ? and completed_at is null', [
    accountId,
    key,
  ]);
}

/**
 * Asks for the account's sandbox's destruction, and answers the sandbox as it now is: terminating,
 * or as it was when asked for already or destroyed (left as it is); 404 for none. A running one
 * takes one statement, its job queued beside the announcement.
 */
export async function requestDestroy(deps: AppDeps, em: EntityManager, accountId: string, id: string): Promise<Sandbox> {
  const queueDestroy = () => enqueue(deps.queue, 'destroy', { sandboxId: id, reason: 'user' });
  // An id we never issue is unknown without a query (PostgreSQL refuses some strings, such as NUL).
  const marked = isId('sbx', id) ? await markTerminatingByItsUser(em, accountId, id, deps.events, queueDestroy) : undefined;
  if (marked) return marked;
  const sandbox = await findOwnSandbox(deps.pg, accountId, id);
  // Asked for already: its job again (one job, by its id), should the first have been lost.
  if (sandbox.state === 'active') await queueDestroy();
  return sandbox;
}

const WAIT_POLL_MS = 500;

/**
 * Waits (bounded) until the sandbox is `settled`, then answers it as it now is. The account's
 * events, rung right after the worker's commit, carry the sandbox's transitions: one that settles
 * it is the answer, with no read. Otherwise the ring and the job's end say when to look at the row,
 * read again every half second as well, so a message lost with Redis (restarted, or its connection
 * down) costs half a second, not the whole timeout. A failed job or a timeout still ends in
 * answering the row: it says what happened.
 */
export async function waitForJob(
  deps: AppDeps,
  base: Sandbox,
  jobId: string,
  timeoutMs: number,
  settled: (sandbox: Sandbox) => boolean,
): Promise<Sandbox> {
  const deadline = Date.now() + timeoutMs;
  let finished = false;
  let wake: (() => void) | undefined;
  const onFinished = (event: { jobId: string }) => {
    if (event.jobId !== jobId) return;
    finished = true;
    wake?.();
  };
  deps.queueEvents.on('completed', onFinished);
  deps.queueEvents.on('failed', onFinished);
  const { id: sandboxId, accountId } = base;
  const rung = deps.eventHub.watch(accountId, sandboxId);
  try {
    for (;;) {
      const heard = rung.heard();
      if (heard && settled(withTransition(base, heard))) return withTransition(base, heard);
      const jobFinished = finished;
      let sandbox: Sandbox | null | undefined;
      try {
        sandbox = (await sandboxes.findOwnSandbox(deps.pg, accountId, sandboxId)) ?? null;
      } catch (err) {
        // The database away for a moment: keep waiting; a read at the deadline answers for it.
        if (!isDependencyUnavailable(err) || Date.now() >= deadline) throw err;
      }
      if (sandbox === null) throw new ApiError('sandbox_not_found', `No sandbox ${sandboxId}.`);
      if (sandbox && (jobFinished || settled(sandbox) || Date.now() >= deadline)) return sandbox;
      if (!finished || sandbox === undefined) {
        const ms = Math.max(0, Math.min(WAIT_POLL_MS, deadline - Date.now()));
        await Promise.race([rung.changed(ms), new Promise<void>((resolve) => (wake = resolve))]);
        wake = undefined;
      }
    }
  } finally {
    rung.release();
    deps.queueEvents.off('completed', onFinished);
    deps.queueEvents.off('failed', onFinished);
  }
}

export const createJobId = (sandboxId: string) => jobCatalogue.create.jobId({ sandboxId });
export const destroyJobId = (sandboxId: string) => jobCatalogue.destroy.jobId({ sandboxId });

/** The caller's sandbox, or 404 exactly as for one that does not exist. */
export async function findOwnSandbox(pool: Pool, accountId: string, id: string): Promise<Sandbox> {
  // An id we never issue is unknown without a query (PostgreSQL refuses some strings, such as NUL).
  const sandbox = isId('sbx', id) ? await sandboxes.findOwnSandbox(pool, accountId, id) : undefined;
  if (!sandbox) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
  return sandbox;
}

/**
 * The account's sandbox as GET /v1/sandboxes/{id} presents it: a view kept in Redis while none of
 * the account's sandboxes changes (shared/cache/read-views.ts), else one round trip to PostgreSQL.
 */
export async function presentedOwnSandbox(deps: Pick<AppDeps, 'pg' | 'views'>, accountId: string, id: string): Promise<PresentedSandbox> {
  // An id we never issue is unknown without a query (PostgreSQL refuses some strings, such as NUL).
  const load = async () => {
    const sandbox = await sandboxes.findOwnSandbox(deps.pg, accountId, id);
    return sandbox && presentSandbox(sandbox);
  };
  // Only an active one is kept: an account holds at most its concurrent cap of them, so what it
  // can make Redis hold is bounded, however many destroyed sandboxes it reads.
  const presented = isId('sbx', id) ? await deps.views.view(accountId, `sandbox:${id}`, load, (s) => s.state === 'active') : undefined;
  if (!presented) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
  return presented;
}

/** A sandbox, the allowlist its commands obey, and the secrets they get. */
export interface ExecContext {
  sandbox: Sandbox;
  allowlist: Allowlist;
  /** Decrypts what the read brought, if anything: called only for a command that may run. */
  openSecrets(): OpenedSecrets;
}

/**
 * The caller's sandbox with the policy an exec in it obeys (one round trip), or 404. The read
 * brings the secrets' ciphertexts only if they changed since this process last opened them.
 */
export async function findOwnSandboxWithPolicy(deps: AppDeps, accountId: string, id: string): Promise<ExecContext> {
  const held = isId('sbx', id) ? deps.openedSecrets.get(accountId, id) : undefined;
  const found = isId('sbx', id) ? await sandboxes.findOwnSandboxWithPolicy(deps.pg, accountId, id, held?.version ?? undefined) : undefined;
  if (!found) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
  const { sandbox, allowlist, secrets } = found;
  return { sandbox, allowlist, openSecrets: () => openSecrets(deps, accountId, id, secrets, held) };
}

/** One page of the caller's sandboxes, newest first; 404 for a cursor that is not one of them. */
export async function listOwnSandboxes(
  pool: Pool,
  accountId: string,
  options: { state: 'active' | 'destroyed' | 'all'; after?: string; limit: number },
): Promise<SandboxPage> {
  const page = options.after === undefined || isId('sbx', options.after) ? await sandboxes.listOwnSandboxes(pool, accountId, options) : undefined;
  if (!page) throw new ApiError('sandbox_not_found', `No sandbox ${options.after}.`);
  return page;
}

/**
 * The create-time env reaches every exec: while an allowlist is in force it may not set what
 * decides which code runs (LD_PRELOAD, PATH, BASH_ENV…), as exec's own env may not. An allowlist
 * set later is enforced on the merged environment at every exec (prepareExec).
 */
async function refuseProtectedEnv(pool: Pool, accountId: string, env: Record<string, string> | undefined): Promise<void> {
  if (!env || Object.keys(env).length === 0) return;
  const { commands } = await getAllowlist(pool, accountId);
  const verdict = checkEnvironment(commands, env);
  if (!verdict.allowed) throw new ApiError('command_not_allowed', verdict.reason, { extra: { variable: verdict.variable } });
}
