import type { Account } from '../api/types.ts';
import type { KeyRow } from '../services/account.ts';
import { decimal, table } from './format.ts';
import { size } from './snapshots.ts';

/** What whoami says of the account, a fact a line. */
export function accountSummary(a: Account): string {
  const { sandboxHours: h, concurrentSandboxes: c, snapshotStorage: st } = a.usage;
  return [
    `Email:     ${a.email}`,
    `Account:   ${a.id}`,
    `Usage:     ${decimal(h.used)}/${decimal(h.limit)} sandbox-hours this month`,
    `Sandboxes: ${c.active}/${c.limit} concurrent`,
    `Snapshots: ${size(st.usedBytes)} of ${size(st.limitBytes)} stored`,
  ].join('\n');
}

export function keyTable(keys: KeyRow[]): string {
  return table(
    ['ID', 'NAME', 'START', 'CREATED', 'LAST USED'],
    keys.map((k) => [k.id, k.current ? `${k.name} (this CLI)` : k.name, `${k.start}…`, k.createdAt, k.lastUsedAt ?? 'never']),
  );
}
