import type { Sandbox } from '../api/types.ts';
import { countdown, duration, table } from './format.ts';
import { describeNetwork } from '../api/index.ts';

export function timeLeft(s: Sandbox, now: number): string {
  return s.state === 'destroyed' ? '-' : countdown(Date.parse(s.expiresAt), now);
}

export function sessionTable(sessions: Sandbox[], now = Date.now()): string {
  return table(
    ['ID', 'STATUS', 'AGE', 'TIME LEFT'],
    sessions.map((s) => [s.id, s.status, duration(now - Date.parse(s.createdAt)), timeLeft(s, now)]),
  );
}

export function sessionDetail(s: Sandbox, now = Date.now()): string {
  const rows: [string, string][] = [
    ['id', s.id],
    ['state', s.state],
    ['status', s.status],
    ['image', s.image],
    ['created', s.createdAt],
    ['age', duration(now - Date.parse(s.createdAt))],
    ['expires', s.expiresAt],
    ['time left', timeLeft(s, now)],
  ];
  if (s.readyAt) rows.push(['ready', s.readyAt]);
  if (s.destroyedAt) rows.push(['destroyed', s.destroyedAt]);
  if (s.destroyReason) rows.push(['reason', s.destroyReason]);
  if (s.failureMessage) rows.push(['failure', s.failureMessage]);
  rows.push(['network', describeNetwork(s.network)]);
  if (s.snapshotOnDestroy) rows.push(['final snapshot', s.finalSnapshotId ?? (s.state === 'destroyed' ? 'none (it failed)' : 'taken when it ends')]);
  for (const [k, v] of Object.entries(s.metadata)) rows.push([`metadata.${k}`, v]);
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${v}`).join('\n');
}
