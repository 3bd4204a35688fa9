import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import type { LimitOverrides, Usage } from '../repositories/accounts.ts';

export interface AccountLimits {
  concurrentSandboxes: number;
  monthlySandboxHours: number;
}

export type QuotaDefaults = Pick<Config, 'PADDOCK_QUOTA_CONCURRENT_SANDBOXES' | 'PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS'>;

/** The operator's defaults, overridden per account where the account row says so. */
export function limitsOf(account: LimitOverrides, config: QuotaDefaults): AccountLimits {
  return {
    concurrentSandboxes: account.concurrentSandboxesLimit ?? config.PADDOCK_QUOTA_CONCURRENT_SANDBOXES,
    monthlySandboxHours: account.monthlySandboxHoursLimit ?? config.PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS,
  };
}

/** A create is refused (429) at the concurrent cap first, then at the month's sandbox-hours. */
export function refuseOverQuota(limit: AccountLimits, { active, hours: used }: Usage): void {
  if (active >= limit.concurrentSandboxes) {
    throw new ApiError(
      'concurrent_sandbox_limit_reached',
      `${active} of ${limit.concurrentSandboxes} concurrent sandboxes are active; destroy one first.`,
      { extra: { active, limit: limit.concurrentSandboxes } },
    );
  }
  if (used >= limit.monthlySandboxHours) {
    throw new ApiError(
      'monthly_usage_limit_reached',
      `${used.toFixed(2)} of ${limit.monthlySandboxHours} sandbox-hours are used this month.`,
      { extra: { used: Math.round(used * 10_000) / 10_000, limit: limit.monthlySandboxHours } },
    );
  }
}
