import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from '../db/placeholders.ts';

// Sandbox time as billed (shared/usage/billing.ts states the rule): the SQL that counts it, and the
// reads of it across accounts.

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
  select account_id, period_start, seconds from (${ROLLUP_OF_DESTROYED} and s.id = $1) r
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
 * Accounts that used sandbox time lately: the only ones whose usage can have grown. Each half is
 * read from a partial index (active sandboxes; the last hour's destroys), never the history.
 */
export const RECENT_USAGE_ACCOUNTS = `
  select account_id from sandboxes where state = 'active' and ready_at is not null
  union
  select account_id from sandboxes where state = 'destroyed' and destroyed_at > now() - interval '1 hour' and ready_at is not null`;

export interface HoursUsed {
  account_id: string;
  used_hours: number;
  limit_hours: number;
}

/**
 * Accounts that used sandbox time lately and have used 80% of their month's sandbox-hours or more, the month starting at `periodStart`; `defaultLimitHours` for those with
 * no limit of their own.
 */
export async function accountsNearHoursLimit(em: EntityManager, o: { defaultLimitHours: number; periodStart: Date; limit: number }): Promise<HoursUsed[]> {
  return execute<HoursUsed>(
    em,
    `with recent as (${RECENT_USAGE_ACCOUNTS})
     select u.account_id, u.used_hours, u.limit_hours from (
       select a.id as account_id,
              coalesce(a.monthly_sandbox_hours_limit, $1) as limit_hours,
              (${secondsUsedSql('$2', 'a.id')}) / 3600 as used_hours
         from accounts a join recent r on r.account_id = a.id) u
     where u.used_hours >= u.limit_hours * 0.8
     limit $3`,
    [o.defaultLimitHours, o.periodStart, o.limit],
  );
}
