import type { Pool } from 'pg';
import type { Config } from '../../shared/config.ts';
import * as accounts from '../../shared/repositories/accounts.ts';
import type { LimitOverrides } from '../../shared/repositories/accounts.ts';

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

/** The operator's defaults, overridden per account where the account row says so. */
export function limitsOf(account: LimitOverrides, config: Config): AccountLimits {
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

/** The account and its usage this month, in one round trip (GET /v1/account). */
export async function accountWithUsage(
  pool: Pool,
  accountId: string,
  config: Config,
): Promise<{ id: string; email: string; usage: AccountUsage } | undefined> {
  const period = currentPeriod();
  const found = await accounts.accountWithUsage(pool, accountId, period.start);
  if (!found) return undefined;
  return {
    id: found.id,
    email: found.email,
    usage: { limits: limitsOf(found.overrides, config), activeSandboxes: found.usage.active, sandboxHoursUsed: found.usage.hours, period },
  };
}
