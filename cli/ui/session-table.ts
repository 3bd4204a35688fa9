import { Box, Text } from 'ink';
import type { Sandbox } from '../api/types.ts';
import { countdown, duration } from '../output/format.ts';
import { h } from './h.ts';
import { colour } from './colour.ts';

const STATUS_COLOURS: Record<string, string> = { running: 'green', pending: 'yellow', terminating: 'yellow', failed: 'red', terminated: 'gray' };

export interface SessionTableProps {
  sessions: Sandbox[];
  selected: number;
  now: number;
}

/** How long before its cap a session is flagged: the server's default sandbox.expiring warning. */
export const EXPIRY_WARNING_MS = 300_000;

/** The warning line for a running session near its cap, e.g. "⚠ sbx_… expiring in 04:12". */
export function expiringWarning(s: Sandbox, now: number): string | undefined {
  const left = Date.parse(s.expiresAt) - now;
  if (s.state !== 'active' || s.status === 'terminating' || left > EXPIRY_WARNING_MS) return undefined;
  return `⚠ ${s.id} expiring in ${countdown(Date.parse(s.expiresAt), now)}: save what you need; the session cap destroys it then`;
}

/** The sessions, one a row, with a live countdown to each one's cap; the chosen row marked. */
export function SessionTable({ sessions, selected, now }: SessionTableProps) {
  if (sessions.length === 0) {
    return h(Text, { dimColor: true }, 'No active sessions. Press n to create one.');
  }
  const idWidth = Math.max(2, ...sessions.map((s) => s.id.length));
  const row = (marker: string, id: string, status: string, age: string, left: string) =>
    `${marker} ${id.padEnd(idWidth)}  ${status.padEnd(11)}  ${age.padEnd(7)}  ${left}`;
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { bold: true }, row(' ', 'ID', 'STATUS', 'AGE', 'TIME LEFT')),
    ...sessions.map((s, i) => {
      const chosen = i === selected;
      const left = countdown(Date.parse(s.expiresAt), now);
      return h(
        Text,
        { key: s.id, inverse: chosen, color: chosen ? undefined : colour(STATUS_COLOURS[s.status]) },
        row(chosen ? '>' : ' ', s.id, s.status, duration(now - Date.parse(s.createdAt)), left),
      );
    }),
    ...sessions.flatMap((s) => {
      const warning = expiringWarning(s, now);
      return warning ? [h(Text, { key: `warn-${s.id}`, color: 'yellow' }, warning)] : [];
    }),
  );
}
