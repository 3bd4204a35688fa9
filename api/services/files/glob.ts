import { posix } from 'node:path';
import type { AppDeps } from '../../context.ts';
import { compileGlob, GlobBudgetExhausted } from './glob-match.ts';
import { GLOB_MAX_MATCH_STEPS, GLOB_MAX_MATCHES, GLOB_MAX_SCANNED, SEARCH_TIMEOUT_MS } from './limits.ts';
import { runScript, throwIfFailed } from './run.ts';
import { GLOB_SCRIPT } from './scripts.ts';

export interface GlobRequest {
  pattern: string;
  /** The directory a relative pattern is relative to (normalised, absolute). */
  path: string;
}

export interface GlobResult {
  pattern: string;
  /** Absolute paths, sorted. */
  matches: string[];
  /** More matches than GLOB_MAX_MATCHES, or the walk stopped early (too many entries, or the time). */
  truncated: boolean;
}

/** Splits NUL-terminated records as they arrive, across chunk boundaries. */
export class RecordSplitter {
  private pending: Buffer = Buffer.alloc(0);
  private readonly separator: number;
  constructor(separator: number) {
    this.separator = separator;
  }
  push(chunk: Buffer, onRecord: (record: Buffer) => boolean): boolean {
    let buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    for (let end = buf.indexOf(this.separator); end !== -1; end = buf.indexOf(this.separator)) {
      const record = buf.subarray(0, end);
      buf = buf.subarray(end + 1);
      if (!onRecord(record)) {
        this.pending = Buffer.alloc(0);
        return false;
      }
    }
    this.pending = Buffer.from(buf);
    return true;
  }
}

/**
 * The sandbox walks (find, symlinks not followed, hidden subtrees skipped when the pattern cannot
 * match in them) and streams every path; the pattern is matched here. The walk is stopped once
 * there are more matches than the cap, after GLOB_MAX_SCANNED entries, or at the timeout.
 */
export async function globFiles(deps: AppDeps, sandboxId: string, request: GlobRequest): Promise<GlobResult> {
  const glob = compileGlob(request.pattern, request.path);
  const matches: string[] = [];
  let scanned = 0;
  let capped = false;
  const records = new RecordSplitter(0);
  const budget = { steps: GLOB_MAX_MATCH_STEPS };
  const matchOne = (relative: string): boolean => {
    try {
      return glob.matches(relative, budget);
    } catch (err) {
      if (!(err instanceof GlobBudgetExhausted)) throw err;
      capped = true;
      return false;
    }
  };
  const result = await runScript(
    deps,
    sandboxId,
    GLOB_SCRIPT,
    [request.path, glob.start, String(glob.maxDepth), glob.pruneHidden ? '1' : '0'],
    {
      timeoutMs: SEARCH_TIMEOUT_MS,
      maxStdoutBytes: Number.MAX_SAFE_INTEGER,
      onStdout: (chunk) =>
        records.push(chunk, (record) => {
          const relative = record.toString('utf8');
          if (matchOne(relative)) matches.push(posix.join(glob.start, relative));
          if (capped || matches.length > GLOB_MAX_MATCHES || ++scanned > GLOB_MAX_SCANNED) {
            capped = true;
            return false;
          }
          return true;
        }),
    },
  );
  throwIfFailed(result, request.path);
  const truncated = capped || result.timedOut;
  if (matches.length > GLOB_MAX_MATCHES) matches.length = GLOB_MAX_MATCHES;
  matches.sort();
  return { pattern: request.pattern, matches, truncated };
}
