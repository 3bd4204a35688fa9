import type { Pool } from 'pg';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Account } from '../db/entities.ts';
import type { UsageParts } from '../usage/billing.ts';
import { secondsUsedSql } from './usage.ts';
import type { Rows, Statement } from '../db/batch.ts';

// The account aggregate with its usage: its quota overrides, its active sandboxes and the month's
// sandbox-seconds (rolled up at each destroy, plus the running ones). Every read of them is here,
// and the account's own row: created at signup, found by its email at login.

export interface NewAccount {
  id: string;
  email: string;
  passwordHash: string;
  createdAt: Date;
}

/** The account stored; undefined when the email is taken. */
export async function insertAccount(em: EntityManager, fields: NewAccount): Promise<Account | undefined> {
  const account = em.create(Account, fields);
  try {
    await em.flush();
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) return undefined;
    throw err;
  }
  return account;
}

export async function findAccountByEmail(em: EntityManager, email: string): Promise<Account | undefined> {
  return (await em.findOne(Account, { email })) ?? undefined;
}

/** Per-account overrides of the operator's quota defaults; null: the default. */
export interface LimitOverrides {
  concurrentSandboxesLimit: number | null;
  monthlySandboxHoursLimit: number | null;
}

export interface Usage {
  active: number;
  hours: number;
}

interface OverrideColumns {
  concurrent_sandboxes_limit: number | null;
  monthly_sandbox_hours_limit: number | null;
}

interface UsageColumns {
  active: string | number;
  seconds: string | number | null;
}

const activeCount = (account: string) => `select count(*) from sandboxes where account_id = ${account} and state = 'active'`;

// A named statement: GET /v1/account is on every client's hot path (whoami, the picker's footer).
// It answers the parts of the month's usage, not their sum at the database's now: the sum is taken
// when answered (billing.ts, secondsUsedAt), so the parts can be kept as a view (cache/read-views.ts).
const ACCOUNT_WITH_USAGE = {
  name: 'paddock-account-with-usage-parts',
  text: `select a.id, a.email, a.concurrent_sandboxes_limit, a.monthly_sandbox_hours_limit,
                coalesce((select r.seconds from usage_rollups r where r.account_id = a.id and r.period_start = $1::timestamptz), 0) as rolled,
                (select coalesce(json_agg(extract(epoch from s.ready_at) * 1000), '[]'::json)
                   from sandboxes s where s.account_id = a.id and s.state = 'active') as active,
                (select coalesce(sum(sn.size_bytes), 0) from snapshots sn where sn.account_id = a.id and sn.status = 'ready') as snapshot_bytes
           from accounts a where a.id = $2`,
};

const overridesOf = (row: OverrideColumns): LimitOverrides => ({
  concurrentSandboxesLimit: row.concurrent_sandboxes_limit,
  monthlySandboxHoursLimit: row.monthly_sandbox_hours_limit,
});

/** The account with the parts of its usage in a month: plain JSON, so that it can be kept as a view. */
export interface AccountRecord {
  id: string;
  email: string;
  overrides: LimitOverrides;
  usage: UsageParts;
  /** Bytes its ready snapshots hold. */
  snapshotBytes: number;
}

/** The account and the parts of its usage in the month from `periodStart`, in one round trip; undefined when there is no such account. */
export async function accountWithUsage(pool: Pool, accountId: string, periodStart: Date): Promise<AccountRecord | undefined> {
  type Row = OverrideColumns & { id: string; email: string; rolled: string | number; active: (number | null)[]; snapshot_bytes: string | number };
  const row = (await pool.query<Row>({ ...ACCOUNT_WITH_USAGE, values: [periodStart, accountId] })).rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
    email: row.email,
    overrides: overridesOf(row),
    usage: {
      periodStart: periodStart.getTime(),
      rolledSeconds: Number(row.rolled),
      active: row.active.length,
      runningSince: row.active.filter((at): at is number => at !== null).map(Number),
    },
    snapshotBytes: Number(row.snapshot_bytes),
  };
}

/**
 * Locks the account's row for the rest of its transaction (concurrent creates through any replica
 * take turns); `overridesFrom` reads its row, none when there is no such account. The usage is read
 * by a statement after it (usageStatement, in the same batch): a statement that locked and counted
 * at once would count from a snapshot taken before it waited for the lock, blind to the create it
 * waited for.
 */
export function lockAccountStatement(accountId: string): Statement {
  return { sql: 'select concurrent_sandboxes_limit, monthly_sandbox_hours_limit from accounts where id = $1 for update', params: [accountId] };
}

export function overridesFrom(rows: Rows): LimitOverrides | undefined {
  const row = rows[0] as OverrideColumns | undefined;
  return row && overridesOf(row);
}

/** The account's active sandboxes and sandbox-hours in the month from `periodStart`, in one statement. */
export function usageStatement(accountId: string, periodStart: Date): Statement {
  return {
    sql: `select (${activeCount('$1')}) as active, (${secondsUsedSql('$2', '$1')}) as seconds`,
    params: [accountId, periodStart],
  };
}

export function usageFrom(rows: Rows): Usage {
  const row = rows[0] as UsageColumns | undefined;
  return { active: Number(row?.active ?? 0), hours: Math.max(0, Number(row?.seconds ?? 0)) / 3600 };
}
