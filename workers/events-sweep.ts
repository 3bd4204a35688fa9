import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../shared/config.ts';
import { currentMonth } from '../shared/events/usage-period.ts';
import type { Announcer } from '../shared/events/announce.ts';
import { enqueueWebhookJobs } from '../shared/jobs/webhooks.ts';
import { settleWithin } from '../shared/settle-within.ts';
import { markExpiring } from '../shared/sandboxes/transitions.ts';
import { deploymentOf } from '../shared/deployment.ts';
import { deleteEventsOlderThan, recordEvents, undispatchedEventIds } from '../shared/repositories/events.ts';
import { accountsNearHoursLimit } from '../shared/repositories/usage.ts';
import { expiryWarningsDue } from '../shared/repositories/sandboxes.ts';
import { stalledDeliveries } from '../shared/repositories/webhooks.ts';

const BATCH = 1000;
// An event not dispatched this long after its commit lost its announcement (Redis away). Long
// enough that a busy queue is not mistaken for a lost job: the sweep's job would run with this
// worker's transport (tests run several stacks, with test networks of their own, on one database).
const UNDISPATCHED_AFTER_SECONDS = 60;
// A pending delivery whose next attempt is this far behind lost its job.
const STALLED_DELIVERY_SECONDS = 120;
const THRESHOLDS = [80, 100] as const;
const QUEUE_WITHIN_MS = 2000;

export interface EventSweepReport {
  expiring: number;
  redispatched: number;
  requeued: number;
  thresholds: number;
}

export interface EventSweepDeps {
  /** A unit of work of its own for each step. */
  unitOfWork: () => EntityManager;
  config: Pick<Config, 'PADDOCK_REDIS_PREFIX' | 'PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS' | 'PADDOCK_EVENT_RETENTION_DAYS'>;
  /** The webhook queue's connection: enqueueing is skipped while it is down. */
  redis: Redis;
  webhookQueue: Queue;
  events: Announcer;
}

/**
 * The events' part of the reaper sweep, from PostgreSQL alone: the expiry warnings whose delayed
 * job was lost, the events and deliveries whose jobs were lost, the usage thresholds crossed (usage
 * grows while sandboxes run, with no transition to carry it), and the retention limits.
 */
export async function sweepEvents(deps: EventSweepDeps, inParallel: (ids: string[], work: (id: string) => Promise<unknown>) => Promise<void>): Promise<EventSweepReport> {
  const em = deps.unitOfWork();
  let expiring = 0;
  // The warning time was decided at creation (as expiresAt), so every worker's sweep agrees on it.
  const due = await expiryWarningsDue(em, deploymentOf(deps.config), BATCH);
  await inParallel(due, async (id) => {
    if (await markExpiring(deps.unitOfWork(), id, deps.events)) expiring++;
  });
  const thresholds = await recordUsageThresholds(deps);
  const undispatched = await undispatchedEventIds(em, UNDISPATCHED_AFTER_SECONDS, BATCH);
  // Redis away (or never reached since this worker started, when BullMQ waits without limit):
  // the next sweep tries again; this one must not stall the sandboxes' sweeps behind it.
  await settleWithin(deps.redis, () => enqueueWebhookJobs(deps.webhookQueue, 'dispatch', undispatched.map((eventId) => ({ eventId }))), QUEUE_WITHIN_MS);
  const stalled = await stalledDeliveries(em, STALLED_DELIVERY_SECONDS, BATCH);
  await settleWithin(
    deps.redis,
    () => enqueueWebhookJobs(deps.webhookQueue, 'deliver', stalled.map((d) => ({ endpointId: d.endpoint_id, eventId: d.event_id }))),
    QUEUE_WITHIN_MS,
  );
  await deleteEventsOlderThan(deps.unitOfWork(), deps.config.PADDOCK_EVENT_RETENTION_DAYS);
  return { expiring, redispatched: undispatched.length, requeued: stalled.length, thresholds };
}

/** usage.threshold at 80% and 100% of the month's sandbox-hours, once each per account and month. */
async function recordUsageThresholds(deps: EventSweepDeps): Promise<number> {
  const period = currentMonth();
  const em = deps.unitOfWork();
  const rows = await accountsNearHoursLimit(em, { defaultLimitHours: deps.config.PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS, periodStart: period.start, limit: BATCH });
  let recorded = 0;
  for (const row of rows) {
    const used = Number(row.used_hours);
    const limit = Number(row.limit_hours);
    const crossed = THRESHOLDS.filter((t) => used >= (limit * t) / 100);
    const events = await recordEvents(
      em,
      crossed.map((threshold) => ({
        accountId: row.account_id,
        type: 'usage.threshold',
        dedupeKey: `usage.threshold:${period.start.toISOString().slice(0, 7)}:${threshold}`,
        data: {
          threshold,
          usage: { sandboxHours: { used: Math.round(used * 10_000) / 10_000, limit } },
          period: { start: period.start.toISOString(), end: period.end.toISOString() },
        },
      })),
    );
    recorded += events.filter(Boolean).length;
    await deps.events.announce(events);
  }
  return recorded;
}
