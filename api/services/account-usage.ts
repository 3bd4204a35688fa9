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

/** The operator's defaults, overridden per account where the account row says so. */
export function limitsOf(account: Account, config: Config): AccountLimits {
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

export async function usageOf(_em: EntityManager, account: Account, config: Config): Promise<AccountUsage> {
  // Sandboxes arrive with the lifecycle work; until then nothing is used.
  return { limits: limitsOf(account, config), sandboxHoursUsed: 0, activeSandboxes: 0, period: currentPeriod() };
}
