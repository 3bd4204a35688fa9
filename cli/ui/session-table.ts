import { Box, Text } from 'ink';
import type { Sandbox } from '../api/types.ts';
import { countdown, duration } from '../output/format.ts';
import { h } from './h.ts';

const STATUS_COLOURS: Record<string, string> = { running: 'green', pending: 'yellow', terminating: 'yellow', failed: 'red', terminated: 'gray' };

export interface SessionTableProps {
  sessions: Sandbox[];
  selected: number;
  now: number;
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
        { key: s.id, inverse: chosen, color: chosen ? undefined : STATUS_COLOURS[s.status] },
        row(chosen ? '>' : ' ', s.id, s.status, duration(now - Date.parse(s.createdAt)), left),
      );
    }),
  );
}
