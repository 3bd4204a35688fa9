import type { Snapshot } from '../api/types.ts';
import { table } from './format.ts';

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

/** A size for a person: bytes under a MiB, else MiB, or GiB from one, with one decimal. */
export function size(bytes: number): string {
  if (bytes < MIB) return `${bytes} B`;
  return bytes < GIB ? `${(bytes / MIB).toFixed(1)} MiB` : `${(bytes / GIB).toFixed(1)} GiB`;
}

export function snapshotTable(list: Snapshot[]): string {
  return table(
    ['ID', 'NAME', 'STATUS', 'SIZE', 'FROM', 'CREATED', 'EXPIRES'],
    list.map((s) => [s.id, s.name ?? '-', s.failureCode ? `${s.status} (${s.failureCode})` : s.status, size(s.sizeBytes), s.sandboxId, s.createdAt, s.expiresAt]),
  );
}
