import type { AppDeps } from '../context.ts';
import type { Config } from '../../shared/config.ts';
import { secondsUsedAt } from '../../shared/usage/billing.ts';
import * as accounts from '../../shared/repositories/accounts.ts';
import { limitsOf, type AccountLimits, type QuotaDefaults } from '../../shared/sandboxes/quotas.ts';

export interface AccountUsage {
  limits: AccountLimits;
  sandboxHoursUsed: number;
  activeSandboxes: number;
  snapshotStorage: { usedBytes: number; limitBytes: number };
  period: { start: Date; end: Date };
}

/** The current UTC calendar month: usage is counted within it. */
export function currentPeriod(now = new Date()): { start: Date; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

/**
 * The account and its usage this month (GET /v1/account): a view kept in Redis while none of the
 * account's sandboxes changes (shared/cache/read-views.ts), else one round trip to PostgreSQL.
 */
export async function accountWithUsage(
  deps: Pick<AppDeps, 'pg' | 'views'> & { config: QuotaDefaults & Pick<Config, 'PADDOCK_QUOTA_SNAPSHOT_BYTES'> },
  accountId: string,
  now = new Date(),
): Promise<{ id: string; email: string; usage: AccountUsage } | undefined> {
  const period = currentPeriod(now);
  const found = await deps.views.view(accountId, `account:${period.start.getTime()}`, () => accounts.accountWithUsage(deps.pg, accountId, period.start));
  if (!found) return undefined;
  const used = Math.max(0, secondsUsedAt(found.usage, now.getTime()));
  return {
    id: found.id,
    email: found.email,
    usage: {
      limits: limitsOf(found.overrides, deps.config),
      activeSandboxes: found.usage.active,
      sandboxHoursUsed: used / 3600,
      snapshotStorage: { usedBytes: found.snapshotBytes ?? 0, limitBytes: deps.config.PADDOCK_QUOTA_SNAPSHOT_BYTES },
      period,
    },
  };
}
