import type { AppDeps } from '../../context.ts';
import { FILE_OP_TIMEOUT_MS, LS_MAX_ENTRIES } from './limits.ts';
import { expectSuccess, runScript } from './run.ts';
import { LIST_SCRIPT } from './scripts.ts';

export type EntryType = 'file' | 'dir' | 'symlink' | 'other';

export interface DirEntry {
  name: string;
  type: EntryType;
  /** Bytes; of a symlink, the length of its target's name. */
  size: number;
  modifiedAt: Date;
}

export interface DirListing {
  path: string;
  entries: DirEntry[];
  /** More than LS_MAX_ENTRIES entries: which ones are answered is the directory's order. */
  truncated: boolean;
}

const TYPES: Record<string, EntryType> = { f: 'file', d: 'dir', l: 'symlink' };
const RECORD = /^(\S+) (\d+) (\d+(?:\.\d+)?) ([\s\S]+)$/;

/** Parses LIST_SCRIPT's records; names that are not UTF-8 are decoded with U+FFFD. */
export function parseListing(stdout: Buffer): DirEntry[] {
  const entries: DirEntry[] = [];
  for (const record of stdout.toString('utf8').split('\0')) {
    const m = RECORD.exec(record);
    if (!m) continue;
    entries.push({
      name: m[4]!,
      type: TYPES[m[1]!] ?? 'other',
      size: Number(m[2]),
      modifiedAt: new Date(Math.floor(Number(m[3]) * 1000)),
    });
  }
  return entries;
}

export async function listDirectory(deps: AppDeps, sandboxId: string, path: string): Promise<DirListing> {
  const result = await runScript(deps, sandboxId, LIST_SCRIPT, [path, String(LS_MAX_ENTRIES + 1)], {
    timeoutMs: FILE_OP_TIMEOUT_MS,
    // A name is at most 255 bytes: the cap on entries bounds this long before.
    maxStdoutBytes: (LS_MAX_ENTRIES + 1) * 400,
  });
  expectSuccess(result, path, FILE_OP_TIMEOUT_MS);
  const entries = parseListing(result.stdout);
  const truncated = entries.length > LS_MAX_ENTRIES;
  if (truncated) entries.length = LS_MAX_ENTRIES;
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { path, entries, truncated };
}
