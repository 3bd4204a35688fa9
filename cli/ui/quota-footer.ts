import { Box, Text } from 'ink';
import type { Account } from '../api/types.ts';
import { decimal } from '../output/format.ts';
import { h } from './h.ts';
import { colour } from './colour.ts';

export interface QuotaFooterProps {
  account: Account | undefined;
  keys: string;
}

/** The account's quota, and the keys that work on the current screen. */
export function QuotaFooter({ account, keys }: QuotaFooterProps) {
  const quota = account
    ? `${decimal(account.usage.sandboxHours.used)}/${decimal(account.usage.sandboxHours.limit)} sandbox-hours this month · ` +
      `${account.usage.concurrentSandboxes.active}/${account.usage.concurrentSandboxes.limit} concurrent sandboxes`
    : 'quota: loading…';
  return h(Box, { flexDirection: 'column', marginTop: 1 }, h(Text, { color: colour('cyan') }, quota), h(Text, { dimColor: true }, keys));
}
