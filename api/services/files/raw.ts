import type { Readable } from 'node:stream';
import type { AppDeps, StreamedBody } from '../../context.ts';
import { pacedChunks } from '../bulk-transfers.ts';
import { archiveTimeoutMs } from './archive.ts';
import { download } from './download.ts';
import { unmarkedFailureError } from './errors.ts';
import { RAW_READ_SCRIPT } from './raw-scripts.ts';
import { expectSuccess, runScript } from './run.ts';
import { WRITE_SCRIPT } from './scripts.ts';
import type { WrittenFile } from './write.ts';

// A file's bytes as they are, either way, streamed: neither side is ever held whole by the API.
// They move at the account's share of the server's bulk transfers, as archives do, and are bounded
// by the archives' time (PADDOCK_ARCHIVE_TIMEOUT_SECONDS).

/** One range of bytes (RFC 9110 14.1.2): from `first`, to `last` (inclusive), or the last `suffix`. */
export type ByteRange = { first: number; last?: number } | { suffix: number };

const RANGE = /^bytes=(?:(\d+)-(\d*)|-(\d+))$/;

/**
 * The one range a Range header asks for, or undefined when the whole file is to be sent: no
 * header, one that is not a single byte range (several ranges are answered whole, as RFC 9110
 * allows), or one whose last byte comes before its first (such a header is ignored).
 */
export function parseRange(header: string | undefined): ByteRange | undefined {
  const m = header === undefined ? null : RANGE.exec(header.replace(/\s+/g, ''));
  if (!m) return undefined;
  // Past any file's size, and within what the sandbox's shell counts in.
  const n = (digits: string) => Math.min(Number(digits), Number.MAX_SAFE_INTEGER);
  if (m[3] !== undefined) return { suffix: n(m[3]) };
  const first = n(m[1]!);
  if (m[2] === '') return { first };
  const last = n(m[2]!);
  return last < first ? undefined : { first, last };
}

export interface RawRead {
  /** The file's size. */
  size: number;
  /** The bytes sent, inclusive; undefined when the range is not within the file (416). */
  range?: { start: number; end: number };
  stream: Readable;
  /** Settles once every byte is sent (true) or the read broke off (false: the response must be cut, not ended). */
  complete: Promise<boolean>;
}

/**
 * Opens `path` for reading: resolves once its size is known (so that a path that cannot be read
 * answers a proper error), then its bytes flow at the client's pace (a client that takes nothing
 * for the write timeout is dropped), and stop when `signal` aborts.
 */
export async function openRaw(deps: AppDeps, accountId: string, sandboxId: string, path: string, range: ByteRange | undefined, signal: AbortSignal): Promise<RawRead> {
  const [first, last] = range === undefined ? ['', ''] : 'suffix' in range ? ['', String(range.suffix)] : [String(range.first), range.last === undefined ? '' : String(range.last)];
  const { stream, complete, header } = await download<{ size: number; range?: { start: number; end: number } }>(
    deps,
    accountId,
    sandboxId,
    {
      argv: ['/bin/sh', '-c', RAW_READ_SCRIPT, 'sh', path, first, last],
      path,
      name: 'raw file',
      timeoutMs: archiveTimeoutMs(deps),
      wholeExit: (code) => code === 0,
      // The script's first line: the file's size and the bytes it sends, inclusive.
      header: (line) => {
        const [size = NaN, start = NaN, end = NaN] = line.split(' ').map(Number);
        if (![size, start, end].every(Number.isSafeInteger)) return new Error(`raw read answered no header: ${line.slice(0, 80)}`);
        return start < size && start <= end ? { size, range: { start, end } } : { size };
      },
      unmarked: (stderr) => unmarkedFailureError(stderr, path),
    },
    signal,
  );
  return { ...header, stream, complete };
}

/**
 * Writes the streamed body to `path`: into a temporary file beside it, renamed over it once the
 * body is whole (WRITE_SCRIPT), so a reader sees the old file or the new one. A body cut short, past
 * the limit, or one the disk cannot hold leaves nothing behind: the temporary file is removed,
 * by the script or, when the script was stopped mid-body, by the API after it.
 */
export async function writeRaw(deps: AppDeps, accountId: string, sandboxId: string, path: string, body: StreamedBody, overwrite: boolean): Promise<WrittenFile> {
  const timeoutMs = archiveTimeoutMs(deps);
  const transfer = deps.bulkTransfers.open(accountId);
  const out: Buffer[] = [];
  const temporary = () => {
    const stdout = Buffer.concat(out);
    const end = stdout.indexOf(0);
    return end < 0 ? undefined : stdout.subarray(0, end).toString('utf8');
  };
  let result;
  try {
    result = await runScript(deps, sandboxId, WRITE_SCRIPT, [path, overwrite ? 'replace' : 'create', 'announce'], {
      stdin: pacedChunks(body.chunks, transfer),
      timeoutMs,
      maxStdoutBytes: 16 * 1024,
      onStdout: (chunk) => (out.push(chunk), true),
    });
  } catch (err) {
    // Stopped mid-body (cut short, past the limit, the client gone): its trap never ran.
    await removeTemporary(deps, sandboxId, temporary());
    throw err;
  } finally {
    transfer.close();
  }
  if (result.timedOut) await removeTemporary(deps, sandboxId, temporary());
  expectSuccess(result, path, timeoutMs);
  const stdout = Buffer.concat(out);
  return { path, size: body.received(), overwritten: stdout.subarray(stdout.indexOf(0) + 1).toString() === '1' };
}

async function removeTemporary(deps: AppDeps, sandboxId: string, path: string | undefined): Promise<void> {
  if (!path) return;
  try {
    await runScript(deps, sandboxId, 'rm -f -- "$1"', [path], { timeoutMs: 10_000, maxStdoutBytes: 0 });
  } catch (err) {
    deps.log.warn({ err, sandboxId }, 'removing a broken-off write’s temporary file failed');
  }
}
