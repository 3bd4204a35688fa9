import pg from 'pg';
import { ormPool } from '../shared/db/orm.ts';
import { activeOrPooledIds, overdueSandboxIds, stuckPendingSandboxIds, terminatingSandboxes } from '../shared/repositories/sandboxes.ts';
import { deleteIdempotencyKeysOlderThan } from '../shared/repositories/idempotency.ts';
import { deploymentOf } from '../shared/deployment.ts';
import { trySessionLock } from '../shared/repositories/database.ts';
import type { WorkerDeps } from './context.ts';
import { destroySandbox } from './processors/destroy-sandbox.ts';
import { sweepEvents, type EventSweepDeps, type EventSweepReport } from './events-sweep.ts';
import { tendWarmPool } from './warm-pool-sweep.ts';
import { jobCatalogue } from '../shared/jobs/catalogue.ts';
import { askResend } from '../shared/secrets/brokering.ts';
import { markNetworkRefused } from '../shared/sandboxes/transitions.ts';

// One sweep at a time per deployment (its sandboxes are its own: shared/deployment.ts).
const REAPER_LOCK_CLASS = 7_361_002;
const BATCH = 1000;
const PARALLEL_DESTROYS = 16;
const IDEMPOTENCY_RETENTION_HOURS = 24;
const LOCK_CONNECT_TIMEOUT_MS = 3000;
/** A create job in these states has not settled its sandbox yet ('unread': Redis did not say). */
const UNSETTLED = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children', 'unread']);

export interface SweepReport {
  expired: number;
  failedPending: number;
  retriedTerminating: number;
  orphans: number;
  events?: EventSweepReport;
  snapshots?: { expired: number; abandoned: number };
  /** Sandboxes whose egress refusals were recorded (network.refused). */
  networkRefused?: number;
}

/**
 * The safety net under the delayed expiry jobs: driven by PostgreSQL alone, so a lost Redis, a
 * missed delayed job or a dead worker never leaves a sandbox alive past its cap plus one sweep.
 * Every worker runs it; an advisory lock lets one sweep at a time do a deployment's work.
 */
export function startReaper(deps: WorkerDeps): { stop(): Promise<void> } {
  let running: Promise<unknown> | undefined;
  const tick = () => {
    const started = performance.now();
    running ??= sweepOnce(deps)
      .then((report) => {
        if (report) deps.metrics.reaperSweep.observe((performance.now() - started) / 1000);
      })
      .catch((err: unknown) => deps.log.warn({ err }, 'reaper sweep failed'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, deps.config.PADDOCK_REAPER_SWEEP_SECONDS * 1000);
  const first = setTimeout(tick, 1000);
  return {
    async stop() {
      clearInterval(timer);
      clearTimeout(first);
      await running;
    },
  };
}

export async function sweepOnce(deps: WorkerDeps): Promise<SweepReport | undefined> {
  const lock = new pg.Client({ connectionString: deps.config.DATABASE_URL, connectionTimeoutMillis: LOCK_CONNECT_TIMEOUT_MS });
  // A PostgreSQL restart cuts this idle connection: an unhandled 'error' would end the process.
  // The sweep's own queries fail too and say so; the next tick tries again.
  lock.on('error', (err: Error) => deps.log.warn({ err: err.message }, 'reaper lock connection lost'));
  await lock.connect();
  try {
    if (!(await trySessionLock(lock, REAPER_LOCK_CLASS, deploymentOf(deps.config)))) return undefined;
    return await sweep(deps);
  } finally {
    await lock.end();
  }
}

async function sweep(deps: WorkerDeps): Promise<SweepReport> {
  const em = deps.orm.em.fork();
  const pool = await ormPool(em);
  const now = new Date();
  const deployment = deploymentOf(deps.config);
  const overdue = await overdueSandboxIds(pool, deployment, now, BATCH);
  await inParallel(overdue, (id) => destroySandbox(deps, id, 'expired', 'sweep'), deps);

  const readyCutoff = new Date(now.getTime() - deps.config.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS * 1000);
  const stuckPending = await stuckPendingSandboxIds(pool, deployment, readyCutoff, BATCH);
  const message = deps.sandboxes.notReadyMessage();
  await inParallel(stuckPending, (id) => deps.sandboxes.fail(id, message), deps);

  // A destroy whose job was lost (Redis flushed) would otherwise stay "terminating" forever.
  const terminating = await terminatingSandboxes(pool, deployment, BATCH);
  const asked = new Map(terminating.map((s) => [s.id, s]));
  await inParallel([...asked.keys()], (id) => destroySandbox(deps, id, asked.get(id)?.destroyReason ?? 'user', 'sweep', { final: asked.get(id)?.snapshotOnDestroy }), deps);

  const orphans = await collectOrphans(deps);
  await tendWarmPool(deps, (ids, work) => inParallel(ids, work, deps));

  await deleteIdempotencyKeysOlderThan(pool, IDEMPOTENCY_RETENTION_HOURS);
  // After the sandboxes' own work, which it must never hold up; its failure is its own.
  const events = await sweepEvents(eventSweepDeps(deps), (ids, work) => inParallel(ids, work, deps)).catch((err: unknown) => {
    deps.log.warn({ err }, 'events sweep failed');
    return undefined;
  });
  const snapshots = await deps.snapshots.sweep().catch((err: unknown) => {
    deps.log.warn({ err }, 'snapshots sweep failed');
    return undefined;
  });
  const networkRefused = await recordNetworkRefusals(deps).catch((err: unknown) => {
    deps.log.warn({ err }, 'network refusals sweep failed');
    return undefined;
  });
  const report = { expired: overdue.length, failedPending: stuckPending.length, retriedTerminating: terminating.length, orphans, events, snapshots, networkRefused };
  if (overdue.length || stuckPending.length || orphans) deps.log.info(report, 'reaper sweep');
  return report;
}

/**
 * What each sandbox's egress filter refused, read from the runtime where it counts them, and
 * recorded where it grew, with a network.refused event (at most one a minute a sandbox: the
 * statement's own condition, so two sweeps agree). On the way, a sandbox whose egress was started
 * again gets its brokered credentials again.
 */
async function recordNetworkRefusals(deps: WorkerDeps): Promise<number> {
  const sweep = await deps.runtime.sweepEgress?.();
  if (!sweep) return 0;
  await askResend(deps.redis, deps.config.PADDOCK_REDIS_PREFIX, sweep.uncredentialed);
  const counted = sweep.refused;
  if (!counted.size) return 0;
  let recorded = 0;
  const grown = [...counted].filter(([, refused]) => refused > 0).map(([id]) => id);
  await inParallel(grown, async (id) => {
    if (await markNetworkRefused(deps.orm.em.fork(), id, counted.get(id)!, deps.events)) recorded++;
  }, deps);
  return recorded;
}

/** Runtime sandboxes with no active row: left by a crash between the runtime call and the database write. */
async function collectOrphans(deps: WorkerDeps): Promise<number> {
  const held = await deps.runtime.list();
  if (held.length === 0) return 0;
  // Kept: those with an active row, and pooled ones (no row until claimed).
  const keep = await activeOrPooledIds(await ormPool(deps.orm.em.fork()), held.map((s) => s.id));
  // Not yet an orphan: a sandbox whose create job is still running or queued; the job settles it
  // either way, running it, or undoing it if it was destroyed meanwhile.
  const createState = (id: string) => deps.queue.getJobState(jobCatalogue.create.jobId({ sandboxId: id })).catch(() => 'unread');
  const unkept = held.filter((s) => !keep.has(s.id));
  const states = await Promise.all(unkept.map((s) => createState(s.id)));
  const orphans = unkept.filter((_, i) => !UNSETTLED.has(states[i]!));
  await inParallel(orphans.map((s) => s.id), async (id) => {
    deps.log.warn({ sandboxId: id }, 'destroying orphan runtime sandbox');
    await deps.runtime.destroy(id);
  }, deps);
  return orphans.length;
}

/** Bounded parallelism; one item's failure is logged and does not stop the others. */
async function inParallel<T>(items: T[], work: (item: T) => Promise<unknown>, deps?: WorkerDeps): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(PARALLEL_DESTROYS, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item).catch((err: unknown) => deps?.log.warn({ err, item }, 'reaper step failed'));
    }
  });
  await Promise.all(lanes);
}

function eventSweepDeps(deps: WorkerDeps): EventSweepDeps {
  return { unitOfWork: () => deps.orm.em.fork(), config: deps.config, redis: deps.redis, webhookQueue: deps.webhookQueue, events: deps.events };
}
