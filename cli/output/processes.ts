import type { ProcessInfo } from '../api/types.ts';
import { duration, table } from './format.ts';

function ending(p: ProcessInfo): string {
  if (p.status === 'running') return '-';
  if (p.signal) return p.signal;
  return p.exitCode === null ? '?' : String(p.exitCode);
}

export function processTable(list: ProcessInfo[], now = Date.now()): string {
  return table(
    ['ID', 'STATUS', 'EXIT', 'AGE', 'COMMAND'],
    list.map((p) => [p.id, p.status, ending(p), duration(now - Date.parse(p.startedAt)), oneLine(p.command)]),
  );
}

/** A command on one line of the table, however many it spans. */
function oneLine(command: string): string {
  const flat = command.replace(/\s*\n\s*/g, ' ');
  return flat.length > 60 ? `${flat.slice(0, 59)}…` : flat;
}
