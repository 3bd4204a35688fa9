import type { AppDeps } from '../../context.ts';
import { FILE_OP_TIMEOUT_MS } from './limits.ts';
import { type EntryType } from './list.ts';
import { STAT_SCRIPT } from './manage-scripts.ts';
import { expectSuccess, runScript } from './run.ts';

export interface PathStat {
  path: string;
  type: EntryType;
  /** Bytes; of a symlink, the length of its target's name. */
  size: number;
  /** The permission bits, four octal digits (`0644`). */
  mode: string;
  modifiedAt: Date;
  /** A symlink's target, as written in it (not resolved). */
  target?: string;
}

const TYPES: Record<string, EntryType> = { f: 'file', d: 'dir', l: 'symlink' };
const RECORD = /^(\S+) (\d+) ([0-7]+) (\d+(?:\.\d+)?) ([\s\S]*)$/;

/** What is at `path`, without following it when it is a symlink. */
export async function statPath(deps: AppDeps, sandboxId: string, path: string): Promise<PathStat> {
  // A symlink's target is at most PATH_MAX bytes.
  const result = await runScript(deps, sandboxId, STAT_SCRIPT, [path], { timeoutMs: FILE_OP_TIMEOUT_MS, maxStdoutBytes: 8192 });
  expectSuccess(result, path, FILE_OP_TIMEOUT_MS);
  const m = RECORD.exec(result.stdout.toString('utf8').split('\0')[0] ?? '');
  if (!m) throw new Error(`stat script answered no record: ${result.stdout.subarray(0, 80).toString('latin1')}`);
  const type = TYPES[m[1]!] ?? 'other';
  return {
    path,
    type,
    size: Number(m[2]),
    mode: m[3]!.padStart(4, '0'),
    modifiedAt: new Date(Math.floor(Number(m[4]) * 1000)),
    ...(type === 'symlink' ? { target: m[5]! } : {}),
  };
}
