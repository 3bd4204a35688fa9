import { Box, Text } from 'ink';
import type { Account } from '../api/types.ts';
import { decimal } from '../output/format.ts';
import { h } from './h.ts';
import { colour } from './colour.ts';

export interface QuotaFooterProps {
  account: Account | undefined;
  /** The account could not be read (the message line says why): not "loading" forever. */
  unavailable?: boolean;
  keys: string;
}

/** The account's quota, and the keys that work on the current screen. */
export function QuotaFooter({ account, unavailable = false, keys }: QuotaFooterProps) {
  const quota = account
    ? `${decimal(account.usage.sandboxHours.used)}/${decimal(account.usage.sandboxHours.limit)} sandbox-hours this month · ` +
      `${account.usage.concurrentSandboxes.active}/${account.usage.concurrentSandboxes.limit} concurrent sandboxes`
    : unavailable
      ? 'quota: unavailable'
      : 'quota: loading…';
  return h(Box, { flexDirection: 'column', marginTop: 1 }, h(Text, { color: colour('cyan') }, quota), h(Text, { dimColor: true }, keys));
}
