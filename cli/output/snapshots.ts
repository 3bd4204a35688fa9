import type { Snapshot } from '../api/types.ts';
import { table } from './format.ts';

const MIB = 1024 * 1024;

/** A size for a person: bytes under a MiB, else MiB with one decimal. */
export function size(bytes: number): string {
  return bytes < MIB ? `${bytes} B` : `${(bytes / MIB).toFixed(1)} MiB`;
}

export function snapshotTable(list: Snapshot[]): string {
  return table(
    ['ID', 'NAME', 'STATUS', 'SIZE', 'FROM', 'CREATED', 'EXPIRES'],
    list.map((s) => [s.id, s.name ?? '-', s.failureCode ? `${s.status} (${s.failureCode})` : s.status, size(s.sizeBytes), s.sandboxId, s.createdAt, s.expiresAt]),
  );
}
