import { currentMonth } from '../shared/events/usage-period.ts';
import { recordEvent } from '../shared/events/record.ts';
import { enqueueWebhookJobs } from '../shared/jobs/webhooks.ts';
import { settleWithin } from '../shared/settle-within.ts';
import { secondsUsedSql } from '../shared/usage/billing.ts';
import { markExpiring } from '../shared/sandboxes/transitions.ts';
import type { RecordedEvent } from '../shared/events/types.ts';
import { deploymentOf } from '../shared/deployment.ts';
import type { WorkerDeps } from './context.ts';

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

/**
 * The events' part of the reaper sweep, from PostgreSQL alone: the expiry warnings whose delayed
 * job was lost, the events and deliveries whose jobs were lost, the usage thresholds crossed (usage
 * grows while sandboxes run, with no transition to carry it), and the retention limits.
 */
export async function sweepEvents(deps: WorkerDeps, inParallel: (ids: string[], work: (id: string) => Promise<unknown>) => Promise<void>): Promise<EventSweepReport> {
  const em = deps.orm.em.fork();
  let expiring = 0;
  // The warning time was decided at creation (as expiresAt), so every worker's sweep agrees on it.
  const due = await em.execute<{ id: string }[]>(
    `select id from sandboxes where state = 'active' and expiry_warned_at is null
        and expiry_warning_at <= now() and expires_at > now() and (deployment = ? or deployment is null) limit ?`,
    [deploymentOf(deps.config), BATCH],
  );
  await inParallel(due.map((r) => r.id), async (id) => {
    if (await markExpiring(deps.orm.em.fork(), id, deps.events)) expiring++;
  });
  const thresholds = await recordUsageThresholds(deps);
  const undispatched = await em.execute<{ id: string }[]>(
    `select id from events where dispatched_at is null and created_at < now() - make_interval(secs => ?) order by seq limit ?`,
    [UNDISPATCHED_AFTER_SECONDS, BATCH],
  );
  // Redis away (or never reached since this worker started, when BullMQ waits without limit):
  // the next sweep tries again; this one must not stall the sandboxes' sweeps behind it.
  await settleWithin(deps.redis, () => enqueueWebhookJobs(deps.webhookQueue, 'dispatch', undispatched.map((e) => ({ eventId: e.id }))), QUEUE_WITHIN_MS);
  const stalled = await em.execute<{ endpoint_id: string; event_id: string }[]>(
    `select endpoint_id, event_id from webhook_deliveries
      where state = 'pending' and coalesce(next_attempt_at, created_at) < now() - make_interval(secs => ?) limit ?`,
    [STALLED_DELIVERY_SECONDS, BATCH],
  );
  await settleWithin(
    deps.redis,
    () => enqueueWebhookJobs(deps.webhookQueue, 'deliver', stalled.map((d) => ({ endpointId: d.endpoint_id, eventId: d.event_id }))),
    QUEUE_WITHIN_MS,
  );
  await applyRetention(deps);
  return { expiring, redispatched: undispatched.length, requeued: stalled.length, thresholds };
}

/**
 * Accounts that used sandbox time lately: the only ones whose usage can have grown. Each half is
 * read from a partial index (active sandboxes; the last hour's destroys), never the history.
 */
export const RECENT_USAGE_ACCOUNTS = `
  select account_id from sandboxes where state = 'active' and ready_at is not null
  union
  select account_id from sandboxes where state = 'destroyed' and destroyed_at > now() - interval '1 hour' and ready_at is not null`;

interface UsageRow {
  account_id: string;
  used_hours: number;
  limit_hours: number;
}

/** usage.threshold at 80% and 100% of the month's sandbox-hours, once each per account and month. */
async function recordUsageThresholds(deps: WorkerDeps): Promise<number> {
  const period = currentMonth();
  const em = deps.orm.em.fork();
  // Accounts that used sandbox time lately: the only ones whose usage can have grown.
  const rows = await em.execute<UsageRow[]>(
    `with recent as (${RECENT_USAGE_ACCOUNTS})
     select u.account_id, u.used_hours, u.limit_hours from (
       select a.id as account_id,
              coalesce(a.monthly_sandbox_hours_limit, ?) as limit_hours,
              (${secondsUsedSql('?', 'a.id')}) / 3600 as used_hours
         from accounts a join recent r on r.account_id = a.id) u
     where u.used_hours >= u.limit_hours * 0.8
     limit ?`,
    [deps.config.PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS, period.start, period.start, BATCH],
  );
  let recorded = 0;
  for (const row of rows) {
    const used = Number(row.used_hours);
    const limit = Number(row.limit_hours);
    const crossed = THRESHOLDS.filter((t) => used >= (limit * t) / 100);
    const events = await em.fork().transactional(async (tx) => {
      const out: (RecordedEvent | undefined)[] = [];
      for (const threshold of crossed) {
        out.push(
          await recordEvent(tx, {
            accountId: row.account_id,
            type: 'usage.threshold',
            dedupeKey: `usage.threshold:${period.start.toISOString().slice(0, 7)}:${threshold}`,
            data: {
              threshold,
              usage: { sandboxHours: { used: Math.round(used * 10_000) / 10_000, limit } },
              period: { start: period.start.toISOString(), end: period.end.toISOString() },
            },
          }),
        );
      }
      return out;
    });
    recorded += events.filter(Boolean).length;
    await deps.events.announce(events);
  }
  return recorded;
}

async function applyRetention(deps: WorkerDeps): Promise<void> {
  const em = deps.orm.em.fork();
  const days = deps.config.PADDOCK_EVENT_RETENTION_DAYS;
  await em.execute(
    `delete from events where id in (select id from events where created_at < now() - make_interval(days => ?) limit 5000)`,
    [days],
  );
  await em.execute(
    `delete from webhook_attempts where id in (select id from webhook_attempts where created_at < now() - make_interval(days => ?) limit 5000)`,
    [days],
  );
}
