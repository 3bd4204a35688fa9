import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import type { Config } from '../../shared/config.ts';
import type { Account } from '../../shared/db/entities.ts';
import { secondsUsedSql } from '../../shared/usage/billing.ts';

export interface AccountLimits {
  concurrentSandboxes: number;
  monthlySandboxHours: number;
}

export interface AccountUsage {
  limits: AccountLimits;
  sandboxHoursUsed: number;
  activeSandboxes: number;
  period: { start: Date; end: Date };
}

type LimitColumns = Pick<Account, 'concurrentSandboxesLimit' | 'monthlySandboxHoursLimit'>;

/** The operator's defaults, overridden per account where the account row says so. */
export function limitsOf(account: LimitColumns, config: Config): AccountLimits {
  return {
    concurrentSandboxes: account.concurrentSandboxesLimit ?? config.PADDOCK_QUOTA_CONCURRENT_SANDBOXES,
    monthlySandboxHours: account.monthlySandboxHoursLimit ?? config.PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS,
  };
}

/** The current UTC calendar month: usage is counted within it. */
export function currentPeriod(now = new Date()): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

const activeCount = (account: string) => `select count(*) from sandboxes where account_id = ${account} and state = 'active'`;

interface UsageRow {
  active: string | number;
  seconds: string | number | null;
}

/** Both usage figures of an account in one statement (one round trip). */
export async function currentUsage(em: EntityManager, accountId: string, periodStart: Date): Promise<{ active: number; hours: number }> {
  // secondsUsedSql names the account, the month, the month again, then the account.
  const [row] = await em.execute<UsageRow[]>(`select (${activeCount('?')}) as active, (${secondsUsedSql('?', '?')}) as seconds`, [
    accountId,
    accountId,
    periodStart,
    periodStart,
    accountId,
  ]);
  return { active: Number(row?.active ?? 0), hours: Math.max(0, Number(row?.seconds ?? 0)) / 3600 };
}

interface AccountUsageRow extends UsageRow {
  id: string;
  email: string;
  concurrent_sandboxes_limit: number | null;
  monthly_sandbox_hours_limit: number | null;
}

// A named statement: PostgreSQL plans it once per connection, not on every call.
const ACCOUNT_WITH_USAGE = {
  name: 'paddock-account-with-usage',
  text: `select a.id, a.email, a.concurrent_sandboxes_limit, a.monthly_sandbox_hours_limit,
                (${activeCount('a.id')}) as active,
                (${secondsUsedSql('$1', 'a.id')}) as seconds
           from accounts a where a.id = $2`,
};

/**
 * The account and its usage in one statement, straight on the driver's pool: GET /v1/account is
 * on every client's hot path (whoami, the picker's footer), so it costs one round trip and no
 * ORM work.
 */
export async function accountWithUsage(
  pool: Pool,
  accountId: string,
  config: Config,
): Promise<{ id: string; email: string; usage: AccountUsage } | undefined> {
  const period = currentPeriod();
  const { rows } = await pool.query<AccountUsageRow>({ ...ACCOUNT_WITH_USAGE, values: [period.start, accountId] });
  const row = rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
    email: row.email,
    usage: {
      limits: limitsOf(
        { concurrentSandboxesLimit: row.concurrent_sandboxes_limit, monthlySandboxHoursLimit: row.monthly_sandbox_hours_limit },
        config,
      ),
      activeSandboxes: Number(row.active),
      sandboxHoursUsed: Math.max(0, Number(row.seconds ?? 0)) / 3600,
      period,
    },
  };
}
