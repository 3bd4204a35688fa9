import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../shared/config.ts';
import type { Account } from '../../shared/db/entities.ts';

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

/**
 * Wall-clock sandbox time inside the period, from when each sandbox became ready (a sandbox that
 * never ran bills nothing) to when it was destroyed, or to now while it runs; a sandbox that
 * spans two months counts in each only for its part.
 */
export async function sandboxHoursUsed(em: EntityManager, accountId: string, periodStart: Date): Promise<number> {
  const [row] = await em.execute<{ seconds: string | number | null }[]>(
    `select coalesce(sum(extract(epoch from (coalesce(destroyed_at, now()) - greatest(ready_at, ?::timestamptz)))), 0) as seconds
       from sandboxes
      where account_id = ? and ready_at is not null and coalesce(destroyed_at, now()) > ?::timestamptz`,
    [periodStart, accountId, periodStart],
  );
  return Math.max(0, Number(row?.seconds ?? 0)) / 3600;
}

export async function activeSandboxCount(em: EntityManager, accountId: string): Promise<number> {
  const [row] = await em.execute<{ n: string | number }[]>(
    `select count(*) as n from sandboxes where account_id = ? and state = 'active'`,
    [accountId],
  );
  return Number(row?.n ?? 0);
}

export async function usageOf(em: EntityManager, account: Account, config: Config): Promise<AccountUsage> {
  const period = currentPeriod();
  const [sandboxHours, activeSandboxes] = await Promise.all([
    sandboxHoursUsed(em, account.id, period.start),
    activeSandboxCount(em, account.id),
  ]);
  return { limits: limitsOf(account, config), sandboxHoursUsed: sandboxHours, activeSandboxes, period };
}
