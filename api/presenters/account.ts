import type { Account } from '../../shared/db/entities.ts';
import type { AccountUsage } from '../services/account-usage.ts';

export function presentAccountSummary(account: Account) {
  return { id: account.id, email: account.email, createdAt: account.createdAt.toISOString() };
}

export function presentSessionToken(issued: { token: string; expiresAt: Date }) {
  return { token: issued.token, expiresAt: issued.expiresAt.toISOString() };
}

export function presentAccount(account: Pick<Account, 'id' | 'email'>, usage: AccountUsage) {
  return {
    id: account.id,
    email: account.email,
    usage: {
      sandboxHours: { used: roundHours(usage.sandboxHoursUsed), limit: usage.limits.monthlySandboxHours },
      concurrentSandboxes: { active: usage.activeSandboxes, limit: usage.limits.concurrentSandboxes },
      snapshotStorage: usage.snapshotStorage,
    },
    period: { start: usage.period.start.toISOString(), end: usage.period.end.toISOString() },
  };
}

function roundHours(hours: number): number {
  return Math.round(hours * 10_000) / 10_000;
}
