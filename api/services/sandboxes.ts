import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { ApiError } from '../../shared/errors.ts';
import { isDependencyUnavailable } from '../../shared/unavailable.ts';
import { Sandbox } from '../../shared/db/entities.ts';
import { isId, newId } from '../../shared/ids.ts';
import { enqueue, jobCatalogue } from '../../shared/jobs/catalogue.ts';
import { markDestroyed, markTerminating } from '../../shared/sandboxes/transitions.ts';
import { imageAllowed } from '../../shared/runtime/index.ts';
import type { AppDeps } from '../context.ts';
import { currentPeriod, currentUsage, limitsOf } from './account-usage.ts';

export interface CreateSandboxInput {
  image?: string;
  metadata?: Record<string, string>;
  env?: Record<string, string>;
}

// A first request with a key that has not finished after this long is presumed dead (its API
// process crashed); a retry with the same key then gets the sandbox instead of a 409.
const IN_PROGRESS_WINDOW_MS = 2 * 60 * 1000;

interface AccountLimitRow {
  concurrent_sandboxes_limit: number | null;
  monthly_sandbox_hours_limit: number | null;
}

/**
 * Checks both quotas and records the new sandbox in one transaction that locks the account row,
 * so concurrent creates through any number of API replicas see each other's sandboxes: the caps
 * hold exactly. Only then are the jobs enqueued; nothing is created or billed on a refusal.
 */
export async function createSandbox(
  deps: AppDeps,
  em: EntityManager,
  accountId: string,
  input: CreateSandboxInput,
  idempotencyKey: string | undefined,
): Promise<{ sandbox: Sandbox; replayed: boolean }> {
  const image = input.image ?? deps.config.PADDOCK_KUBE_DEFAULT_IMAGE;
  if (!imageAllowed(deps.config, image)) {
    throw new ApiError('image_not_allowed', `The image "${image}" is not on this operator's allowed list.`);
  }
  const requestHash = createHash('sha256').update(JSON.stringify([image, input.metadata ?? {}, input.env ?? {}])).digest('hex');

  const outcome = await em.transactional(async (tx) => {
    const [limits] = await tx.execute<AccountLimitRow[]>(
      'select concurrent_sandboxes_limit, monthly_sandbox_hours_limit from accounts where id = ? for update',
      [accountId],
    );
    if (!limits) throw new ApiError('invalid_credential');
    if (idempotencyKey) {
      const replay = await findReplay(tx, accountId, idempotencyKey, requestHash);
      if (replay) return { sandboxId: replay, replayed: true };
    }
    const limit = limitsOf(
      { concurrentSandboxesLimit: limits.concurrent_sandboxes_limit, monthlySandboxHoursLimit: limits.monthly_sandbox_hours_limit },
      deps.config,
    );
    const { active, hours: used } = await currentUsage(tx, accountId, currentPeriod().start);
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
    const now = new Date();
    const sandbox = tx.create(Sandbox, {
      id: newId('sbx'),
      accountId,
      state: 'active',
      status: 'pending',
      image,
      metadata: input.metadata ?? {},
      env: input.env ?? {},
      createdAt: now,
      expiresAt: new Date(now.getTime() + deps.config.PADDOCK_SESSION_CAP_SECONDS * 1000),
    });
    await tx.flush();
    if (idempotencyKey) {
      await tx.execute('insert into idempotency_keys (account_id, key, request_hash, sandbox_id) values (?, ?, ?, ?)', [
        accountId,
        idempotencyKey,
        requestHash,
        sandbox.id,
      ]);
    }
    return { sandboxId: sandbox.id, replayed: false };
  });

  const sandbox = await em.findOneOrFail(Sandbox, { id: outcome.sandboxId }, { disableIdentityMap: true });
  if (!outcome.replayed) await scheduleJobs(deps, em, sandbox);
  return { sandbox, replayed: outcome.replayed };
}

async function findReplay(tx: EntityManager, accountId: string, key: string, requestHash: string): Promise<string | undefined> {
  const [row] = await tx.execute<{ request_hash: string; sandbox_id: string; completed_at: Date | null; created_at: Date }[]>(
    'select request_hash, sandbox_id, completed_at, created_at from idempotency_keys where account_id = ? and key = ?',
    [accountId, key],
  );
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

async function scheduleJobs(deps: AppDeps, em: EntityManager, sandbox: Sandbox): Promise<void> {
  try {
    await enqueue(deps.queue, 'create', { sandboxId: sandbox.id });
    await enqueue(deps.queue, 'expire', { sandboxId: sandbox.id }, { delayMs: sandbox.expiresAt.getTime() - Date.now() });
  } catch (err) {
    // Without its jobs the sandbox would never start: release its quota at once and say so.
    await markDestroyed(em, sandbox.id, 'failed', 'The sandbox could not be scheduled.');
    throw err;
  }
}

/** Marks the end of the first request with an idempotency key: retries now get its sandbox. */
export async function completeIdempotencyKey(em: EntityManager, accountId: string, key: string): Promise<void> {
  await em.execute('update idempotency_keys set completed_at = now() where account_id = ? and key = ? and completed_at is null', [
    accountId,
    key,
  ]);
}

/** Asks for the sandbox's destruction; an already destroyed sandbox is left as it is. */
export async function requestDestroy(deps: AppDeps, em: EntityManager, sandbox: Sandbox): Promise<void> {
  if (sandbox.state === 'destroyed') return;
  await markTerminating(em, sandbox.id, 'user');
  await enqueue(deps.queue, 'destroy', { sandboxId: sandbox.id, reason: 'user' });
}

const WAIT_POLL_MS = 500;

/**
 * Waits (bounded) until the sandbox is `settled`, then answers it as it now is. The job's events
 * say when to look; the row, read again every half second as well, is the truth, so an event
 * lost with Redis (restarted, or its events connection down) costs half a second, not the whole
 * timeout. A failed job or a timeout still ends in answering the row: it says what happened.
 */
export async function waitForJob(
  deps: AppDeps,
  em: EntityManager,
  sandboxId: string,
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
  try {
    for (;;) {
      const jobFinished = finished;
      let sandbox: Sandbox | null | undefined;
      try {
        sandbox = await em.findOne(Sandbox, { id: sandboxId }, { disableIdentityMap: true });
      } catch (err) {
        // The database away for a moment: keep waiting; a read at the deadline answers for it.
        if (!isDependencyUnavailable(err) || Date.now() >= deadline) throw err;
      }
      if (sandbox === null) throw new ApiError('sandbox_not_found', `No sandbox ${sandboxId}.`);
      if (sandbox && (jobFinished || settled(sandbox) || Date.now() >= deadline)) return sandbox;
      if (!finished || sandbox === undefined) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(0, Math.min(WAIT_POLL_MS, deadline - Date.now())));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    }
  } finally {
    deps.queueEvents.off('completed', onFinished);
    deps.queueEvents.off('failed', onFinished);
  }
}

export const createJobId = (sandboxId: string) => jobCatalogue.create.jobId({ sandboxId });
export const destroyJobId = (sandboxId: string) => jobCatalogue.destroy.jobId({ sandboxId });

// A named statement on the driver's pool: every sandbox route reads its sandbox first, so this
// read skips the ORM (the row is only presented or inspected, never flushed back).
const OWN_SANDBOX = {
  name: 'paddock-own-sandbox',
  text: `select id, account_id, state, status, image, metadata, env, created_at, ready_at, expires_at,
                destroyed_at, destroy_reason, failure_message
           from sandboxes where id = $1 and account_id = $2`,
};

interface SandboxRow {
  id: string;
  account_id: string;
  state: Sandbox['state'];
  status: Sandbox['status'];
  image: string;
  metadata: Record<string, string>;
  env: Record<string, string>;
  created_at: Date;
  ready_at: Date | null;
  expires_at: Date;
  destroyed_at: Date | null;
  destroy_reason: Sandbox['destroyReason'];
  failure_message: string | null;
}

/** The caller's sandbox, or 404 exactly as for one that does not exist. */
export async function findOwnSandbox(pool: Pool, accountId: string, id: string): Promise<Sandbox> {
  // An id we never issue is unknown without a query (PostgreSQL refuses some strings, such as NUL).
  if (!isId('sbx', id)) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
  const row = (await pool.query<SandboxRow>({ ...OWN_SANDBOX, values: [id, accountId] })).rows[0];
  if (!row) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
  const sandbox = {
    id: row.id,
    accountId: row.account_id,
    state: row.state,
    status: row.status,
    image: row.image,
    metadata: row.metadata,
    env: row.env,
    createdAt: row.created_at,
    readyAt: row.ready_at,
    expiresAt: row.expires_at,
    destroyedAt: row.destroyed_at,
    destroyReason: row.destroy_reason,
    failureMessage: row.failure_message,
  };
  return sandbox as Sandbox;
}
