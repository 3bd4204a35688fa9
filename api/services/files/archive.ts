import type { Readable } from 'node:stream';
import { ApiError } from '../../../shared/errors.ts';
import { download } from './download.ts';
import type { AppDeps, StreamedBody } from '../../context.ts';
import { ARCHIVE_SCRIPT, EXTRACT_SCRIPT, REMOVE_TREE_SCRIPT } from './archive-scripts.ts';
import { DISK_FULL, failureError, markerOf, timeoutError } from './errors.ts';
import { runScript } from './run.ts';
import { pacedChunks } from '../bulk-transfers.ts';
import { MARKER_EXIT } from './scripts.ts';

export const TAR = 'application/x-tar';
export const GZIP = 'application/gzip';
/** The media types an upload takes (application/x-gzip is gzip's older name). */
export const ARCHIVE_MEDIA_TYPES = [TAR, GZIP, 'application/x-gzip'];

// GNU tar's words (LC_ALL=C) for a member it extracted elsewhere than named.
const RENAMED = /Removing leading `[^']*' from (member names|hard link targets)/;

export interface ExtractedArchive {
  path: string;
  /** Members extracted (files, directories, links). */
  files: number;
  /** Bytes of the archive received, as sent (compressed or not). */
  bytes: number;
}

/**
 * Longest an archive may stream, either way. Its own setting, not the exec maximum: a transfer
 * lasts as long as its tree is large (and its sandbox, at a low CPU weight on a busy host, slow),
 * whatever an operator allows one command.
 */
export const archiveTimeoutMs = (deps: AppDeps) => deps.config.PADDOCK_ARCHIVE_TIMEOUT_SECONDS * 1000;

/**
 * Extracts the streamed archive under `path` in the sandbox (created when missing). A failed
 * upload (past the limit, a refused member, a full disk, a body cut short) is an error, never a
 * partial success: when the upload created `path`, it is removed again; into a directory that
 * existed, the members extracted before the failure stay (a retry overwrites them). The body is
 * read at the pace of the account's share of the process's bulk transfers (bulk-transfers.ts).
 */
export async function extractArchive(deps: AppDeps, accountId: string, sandboxId: string, path: string, body: StreamedBody): Promise<ExtractedArchive> {
  const timeoutMs = archiveTimeoutMs(deps);
  const listing = new ListingCounter();
  const compression = body.mediaType === TAR ? 'tar' : 'gzip';
  const transfer = deps.bulkTransfers.open(accountId);
  try {
    const result = await runScript(deps, sandboxId, EXTRACT_SCRIPT, [path, compression], {
      stdin: pacedChunks(body.chunks, transfer),
      timeoutMs,
      maxStdoutBytes: Number.MAX_SAFE_INTEGER,
      onStdout: (chunk) => (listing.push(chunk), true),
    });
    if (result.exitCode === MARKER_EXIT && markerOf(result.stderr)) throw failureError(markerOf(result.stderr)!, path, result.stderr);
    if (result.timedOut) throw timeoutError(timeoutMs);
    if (DISK_FULL.test(result.stderr)) {
      throw new ApiError('insufficient_storage', `The sandbox's disk filled up while extracting into ${JSON.stringify(path)}.`);
    }
    if (result.exitCode !== 0 || RENAMED.test(result.stderr)) {
      throw new ApiError('invalid_archive', `The archive was refused: ${tarMessages(result.stderr)}`);
    }
    return { path, files: listing.members, bytes: body.received() };
  } catch (err) {
    if (listing.made) await removeTree(deps, sandboxId, path);
    throw err;
  } finally {
    transfer.close();
  }
}

export interface ArchiveStream {
  stream: Readable;
  /** Settles once the archive is whole (true) or broken off (false: the response must be cut, not ended). */
  complete: Promise<boolean>;
}

/**
 * Streams `path` as a tar (or tar.gz) archive. Resolves once the first bytes are there, so that a
 * path that cannot be archived answers a proper error; from then on the archive flows at the
 * client's pace (a client that takes nothing for the write timeout is dropped) and at the
 * account's share of the process's bulk transfers (bulk-transfers.ts), and stops when `signal`
 * aborts.
 */
export async function openArchive(deps: AppDeps, accountId: string, sandboxId: string, path: string, gzip: boolean, signal: AbortSignal): Promise<ArchiveStream> {
  const { stream, complete } = await download(
    deps,
    accountId,
    sandboxId,
    {
      argv: ['/bin/sh', '-c', ARCHIVE_SCRIPT, 'sh', path, gzip ? 'gzip' : 'tar'],
      path,
      name: 'archive',
      timeoutMs: archiveTimeoutMs(deps),
      // GNU tar's 1 is "a file changed as it was read": the archive is whole all the same.
      wholeExit: (code) => code === 0 || code === 1,
    },
    signal,
  );
  return { stream, complete };
}

/** Counts the lines tar lists (one a member) after the script's first, which says whether it made the directory. */
class ListingCounter {
  made = false;
  members = 0;
  private first: string | undefined = '';

  push(chunk: Buffer): void {
    let from = 0;
    if (this.first !== undefined) {
      const end = chunk.indexOf(10);
      this.first += chunk.subarray(0, end === -1 ? chunk.length : end).toString('latin1').slice(0, 16);
      if (end === -1) return;
      this.made = this.first === 'made=1';
      this.first = undefined;
      from = end + 1;
    }
    for (let at = chunk.indexOf(10, from); at !== -1; at = chunk.indexOf(10, at + 1)) this.members++;
  }
}

async function removeTree(deps: AppDeps, sandboxId: string, path: string): Promise<void> {
  try {
    await runScript(deps, sandboxId, REMOVE_TREE_SCRIPT, [path], { timeoutMs: 60_000, maxStdoutBytes: 0 });
  } catch (err) {
    deps.log.warn({ err, sandboxId }, 'removing a failed upload’s directory failed');
  }
}

/** tar's own words, which name the members it refused (the caller's own data), kept short. */
function tarMessages(stderr: string): string {
  const lines = stderr
    .split('\n')
    .filter((line) => line.startsWith('tar: ') || line.startsWith('gzip: '))
    .filter((line) => !line.includes('Exiting with failure status'));
  const text = lines.slice(0, 5).join('; ');
  return (text.length > 600 ? `${text.slice(0, 600)}…` : text) || 'tar could not read it.';
}
