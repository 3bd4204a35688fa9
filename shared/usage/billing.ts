// The one billing rule: wall-clock sandbox time from when a sandbox became ready (one that never
// ran bills nothing) to when it was destroyed, or to now while it runs, counted per UTC calendar
// month (a sandbox that spans two months counts in each only for its part).
//
// A destroyed sandbox's time is added to usage_rollups, per account and month, in the transaction
// that destroys it; what is still running is summed from the account's active sandboxes (at most
// its concurrent cap). So the usage of an account costs the same with 100,000 sandboxes behind it
// as with none.

/** The months a destroyed sandbox ran in, and its seconds in each: (account_id, period_start, seconds). */
export const ROLLUP_OF_DESTROYED = `
  select s.account_id, m.period_start,
         extract(epoch from (least(s.destroyed_at, m.period_end) - greatest(s.ready_at, m.period_start))) as seconds
    from sandboxes s
    cross join lateral (
      select g at time zone 'UTC' as period_start, (g + interval '1 month') at time zone 'UTC' as period_end
        from generate_series(date_trunc('month', s.ready_at at time zone 'UTC'),
                             date_trunc('month', s.destroyed_at at time zone 'UTC'), interval '1 month') g
    ) m
   where s.state = 'destroyed' and s.ready_at is not null and s.destroyed_at > s.ready_at`;

/** Adds the sandbox `$1`'s time (once it is destroyed) to its account's months. */
export const ADD_DESTROYED_TO_ROLLUP = `
  insert into usage_rollups (account_id, period_start, seconds)
  select account_id, period_start, seconds from (${ROLLUP_OF_DESTROYED} and s.id = ?) r
  on conflict (account_id, period_start) do update set seconds = usage_rollups.seconds + excluded.seconds`;

/**
 * SQL for an account's seconds used in the month starting at `periodStart`. Both arguments are
 * fixed SQL (a placeholder or a column), never data.
 */
export const secondsUsedSql = (periodStart: string, account: string) => `
  coalesce((select r.seconds from usage_rollups r where r.account_id = ${account} and r.period_start = ${periodStart}::timestamptz), 0)
  + coalesce((select sum(extract(epoch from (now() - greatest(s.ready_at, ${periodStart}::timestamptz))))
                from sandboxes s
               where s.account_id = ${account} and s.state = 'active' and s.ready_at is not null), 0)`;

/**
 * The parts of an account's usage in a month, as read at one moment: what its destroyed sandboxes
 * rolled up, and when each of its active ones became ready (epoch ms; a pending one has none yet).
 */
export interface UsageParts {
  /** The month's first instant, epoch ms. */
  periodStart: number;
  rolledSeconds: number;
  /** Its active sandboxes, pending ones included. */
  active: number;
  runningSince: number[];
}

/** secondsUsedSql's sum, taken at `now` (epoch ms): the parts stay right while no sandbox changes. */
export function secondsUsedAt(parts: UsageParts, now: number): number {
  let seconds = parts.rolledSeconds;
  for (const readyAt of parts.runningSince) seconds += (now - Math.max(readyAt, parts.periodStart)) / 1000;
  return seconds;
}
