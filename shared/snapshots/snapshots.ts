import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import { constants as zlib, createZstdCompress, type ZstdCompress } from 'node:zlib';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { isId } from '../ids.ts';
import type { Announcer } from '../events/announce.ts';
import type { Logger } from '../logger.ts';
import type { JobRequest } from '../jobs/catalogue.ts';
import { SandboxGoneError, type ExecRequest, type ExecResult, type SandboxRuntime } from '../runtime/types.ts';
import {
  beginSnapshot,
  deleteSnapshot,
  expiredSnapshots,
  failSnapshot,
  finishSnapshot,
  listOwnSnapshots,
  readOwnSnapshot,
  stalePendingSnapshots,
  usedSnapshotBytes,
  type SnapshotRow,
} from '../repositories/snapshots.ts';
import { drained } from '../drained.ts';
import type { SnapshotStore } from './store.ts';
import { COPY_BESIDE_SCRIPT, FROZEN_LINE, HALT_SCRIPT, HOLD_NOT_FROZEN_EXIT, HOLD_SCRIPT, NO_WORKSPACE_EXIT, NO_ZSTD_EXIT, RESUME_SCRIPT, TAKE_SCRIPT } from './scripts.ts';
import { SnapshotRestoreError } from './restore-error.ts';
import { extract, extractBeside } from './restore.ts';
import { BoundedText, STDERR_KEPT_BYTES } from './bounded-text.ts';

// Snapshots' rules (docs/api.md, "Snapshots"): a running sandbox's workspace copied, compressed,
// into the snapshot store, streamed (no copy is ever whole in a Paddock process), counted against
// the account's storage as it streams; a sandbox started from one gets the workspace back before
// it runs, each byte checked against the SHA-256 taken as it was written.

export type SnapshotOptions = Pick<Config, 'PADDOCK_QUOTA_SNAPSHOT_BYTES' | 'PADDOCK_SNAPSHOT_RETENTION_DAYS' | 'PADDOCK_ARCHIVE_TIMEOUT_SECONDS' | 'PADDOCK_SNAPSHOT_FINAL_GRACE_SECONDS'>;

export interface SnapshotDeps {
  em: EntityManager;
  runtime: Pick<SandboxRuntime, 'exec' | 'execBeside'>;
  store: SnapshotStore;
  announcer: Pick<Announcer, 'announce'>;
  log: Pick<Logger, 'warn'>;
  /** Queues a snapshot's copy for a worker (a take without waiting); the API's only. */
  jobs?: { add(jobs: JobRequest[]): Promise<unknown> };
}

// Level 3 (zstd's default): a few hundred MB/s a core; a checksum in every frame, so damage is
// told at decompression too.
const ZSTD_PARAMS = { [zlib.ZSTD_c_compressionLevel]: 3, [zlib.ZSTD_c_checksumFlag]: 1 };
/** Output a call: each call is a turn through libuv's thread pool, so few and large ones (16 KiB, the default, took 6 times tar | zstd). */
const ZSTD_CHUNK_BYTES = 1024 * 1024;

/** A zstd frame begins with its magic number, 0xFD2FB528 little-endian; a tar never does (its first member's name). */
const isZstdFrame = (chunk: Uint8Array) => chunk.byteLength >= 4 && chunk[0] === 0x28 && chunk[1] === 0xb5 && chunk[2] === 0x2f && chunk[3] === 0xfd;

/** Resolves once `stream` takes the chunk (or is gone): a slow store holds the tar behind it. */
function written(stream: Writable, chunk: Uint8Array): Promise<void> | void {
  if (stream.destroyed || stream.write(chunk)) return;
  return drained(stream);
}

/** A pending snapshot this long past the longest a copy may take was abandoned. */
const ABANDONED_AFTER_MS = 60_000;

/** Past its ender's grace, a final snapshot still pending this much longer is that ender's that died. */
const FINAL_CLAIM_MARGIN_MS = 30_000;

/** The kill of a sandbox's processes before its final snapshot: a few milliseconds, unless the host is starved. */
const HALT_TIMEOUT_MS = 10_000;

/** The continue of what a killed take stopped: a pass over /proc, unless the host is starved. */
const RESUME_TIMEOUT_MS = 10_000;

/** What tells the hold (HOLD_SCRIPT) the copy is done. */
const RELEASE_LINE = new TextEncoder().encode('\n');

/** How often a copy written straight to its file is measured against the account's room. */
const ROOM_CHECK_MS = 100;

/** What became of a sandbox's final snapshot (Snapshots.keepFinal). */
export type FinalSnapshot = { outcome: 'kept'; snapshotId?: string } | { outcome: 'elsewhere' };

export class Snapshots {
  readonly #deps: SnapshotDeps;
  readonly #options: SnapshotOptions;

  constructor(deps: SnapshotDeps, options: SnapshotOptions) {
    this.#deps = deps;
    this.#options = options;
  }

  /**
   * Copies the running sandbox's workspace into a new snapshot; answers it ready, or throws why
   * not (the snapshot then failed, its bytes gone). Without `wait`, answers it pending at once,
   * and a worker copies it (`complete`), its end told by its event.
   */
  async take(accountId: string, sandboxId: string, input: { name?: string }, options: { wait: boolean } = { wait: true }): Promise<SnapshotRow> {
    if (!isId('sbx', sandboxId)) throw new ApiError('sandbox_not_found', `No sandbox ${sandboxId}.`);
    const limitBytes = this.#options.PADDOCK_QUOTA_SNAPSHOT_BYTES;
    const begun = await beginSnapshot(this.#deps.em, { accountId, sandboxId, name: input.name, expiresAt: this.#expiresAt(), limitBytes });
    if (begun.outcome === 'limit_reached') throw storageLimit(begun.usedBytes, limitBytes);
    if (begun.outcome === 'sandbox_not_found') throw new ApiError('sandbox_not_found', `No sandbox ${sandboxId}.`);
    if (begun.outcome !== 'begun') throw new ApiError('sandbox_not_running', `Sandbox ${sandboxId} is not running: only a running sandbox's workspace can be snapshotted.`);
    if (options.wait || !this.#deps.jobs) return this.#fill(begun.snapshot, begun.usedBytes);
    try {
      await this.#deps.jobs.add([{ name: 'snapshot', payload: { snapshotId: begun.snapshot.id, accountId } }]);
    } catch (err) {
      await failSnapshot(this.#deps.em, begun.snapshot, 'service_unavailable', 'The snapshot could not be scheduled.').catch(() => undefined);
      throw err;
    }
    return begun.snapshot;
  }

  /**
   * The workspace of a sandbox being destroyed that asked for it (snapshotOnDestroy): every
   * process of it ended first, so that none runs on and the copy holds still, then copied within
   * PADDOCK_SNAPSHOT_FINAL_GRACE_SECONDS. `kept` with the snapshot's id once ready, or none when
   * there was nothing to take (it never ran) or the copy failed or overran, which its
   * snapshot.failed event says; `elsewhere` while another ender's copy is under way, when the
   * sandbox is that ender's to destroy. Never throws: the destroy goes on either way.
   */
  async keepFinal(accountId: string, sandboxId: string): Promise<FinalSnapshot> {
    const graceMs = this.#options.PADDOCK_SNAPSHOT_FINAL_GRACE_SECONDS * 1000;
    const deadline = Date.now() + graceMs;
    try {
      const limitBytes = this.#options.PADDOCK_QUOTA_SNAPSHOT_BYTES;
      const staleBefore = new Date(Date.now() - graceMs - FINAL_CLAIM_MARGIN_MS);
      const begun = await beginSnapshot(this.#deps.em, { accountId, sandboxId, expiresAt: this.#expiresAt(), limitBytes, final: { staleBefore } });
      if (begun.outcome === 'final_taken') return begun.status === 'ready' ? { outcome: 'kept', snapshotId: begun.snapshotId } : { outcome: 'elsewhere' };
      if (begun.outcome !== 'begun') return { outcome: 'kept' };
      await this.#deps.runtime
        .exec(sandboxId, { argv: ['/bin/sh', '-c', HALT_SCRIPT, 'paddock-halt'], cwd: '/', env: {}, timeoutMs: Math.max(1000, Math.min(HALT_TIMEOUT_MS, deadline - Date.now())) })
        .catch(() => undefined);
      return { outcome: 'kept', snapshotId: (await this.#fill(begun.snapshot, begun.usedBytes, { timeoutMs: Math.max(1000, deadline - Date.now()) })).id };
    } catch (err) {
      if (!(err instanceof ApiError)) this.#deps.log.warn({ err, sandboxId }, "a sandbox's final snapshot failed");
      return { outcome: 'kept' };
    }
  }

  #expiresAt(): Date {
    return new Date(Date.now() + this.#options.PADDOCK_SNAPSHOT_RETENTION_DAYS * 86_400_000);
  }

  /** A worker's half of a snapshot taken without waiting: the copy, its end recorded as with a wait. */
  async complete(accountId: string, snapshotId: string): Promise<'ready' | 'failed' | 'skipped'> {
    const row = await readOwnSnapshot(this.#deps.em, accountId, snapshotId);
    // Deleted, or ended already (the job ran before, and this is its retry): nothing to do.
    if (row?.status !== 'pending') return 'skipped';
    const used = await usedSnapshotBytes(this.#deps.em, accountId);
    return this.#fill(row, used).then(
      () => 'ready' as const,
      () => 'failed' as const,
    );
  }

  /**
   * The pending snapshot's copy (within `timeoutMs`, else PADDOCK_ARCHIVE_TIMEOUT_SECONDS), and its
   * end recorded: ready, or failed with its failureCode.
   */
  async #fill(row: SnapshotRow, usedBytes: number, options: { timeoutMs?: number } = {}): Promise<SnapshotRow> {
    const limitBytes = this.#options.PADDOCK_QUOTA_SNAPSHOT_BYTES;
    try {
      const copied = await this.#copy(row, limitBytes - usedBytes, options.timeoutMs ?? this.#options.PADDOCK_ARCHIVE_TIMEOUT_SECONDS * 1000);
      const finished = await finishSnapshot(this.#deps.em, row, { ...copied, limitBytes });
      if (!finished) throw new ApiError('snapshot_not_found', `Snapshot ${row.id} was deleted while it was taken.`);
      // Others finished meanwhile: it fails below, as any copy past the account's room does.
      if (finished === 'over_limit') throw storageLimit(usedBytes, limitBytes);
      await this.#deps.announcer.announce([finished.event]);
      return finished.snapshot;
    } catch (err) {
      const failure = err instanceof ApiError ? err : new ApiError('internal_error');
      if (!(err instanceof ApiError)) this.#deps.log.warn({ err, snapshotId: row.id, sandboxId: row.sandbox_id }, 'a snapshot failed');
      await this.#deps.store.remove(row.id).catch(() => undefined);
      await this.#deps.announcer.announce([await failSnapshot(this.#deps.em, row, failure.code, failure.message)]).catch(() => undefined);
      throw failure;
    }
  }

  /**
   * The workspace's tar, compressed here (zstd, on libuv's threads, never the event loop) into the
   * store, counted and digested as it goes; its size, members and digest.
   */
  async #copy(row: SnapshotRow, roomBytes: number, timeoutMs: number): Promise<{ sizeBytes: number; files: number; sha256: Buffer }> {
    const upload = await this.#deps.store.create(row.id);
    const hash = createHash('sha256');
    const stop = new AbortController();
    let sizeBytes = 0;
    let overLimit = false;
    /** Compressed bytes to the store, at the store's pace: what feeds them waits. */
    const store = async (out: Uint8Array) => {
      if (overLimit) return;
      sizeBytes += out.byteLength;
      // Counted as it streams: a workspace larger than the account's room stops here.
      if (sizeBytes > roomBytes) {
        overLimit = true;
        stop.abort();
        compress?.destroy();
        return;
      }
      hash.update(out);
      await upload.write(out);
    };
    // Made only for an image without zstd: a compressor's context is megabytes of the worker's memory.
    let compress: ZstdCompress | undefined;
    let compressed: Promise<void> = Promise.resolve();
    const compressor = (): ZstdCompress => {
      if (compress) return compress;
      const made = createZstdCompress({ params: ZSTD_PARAMS, chunkSize: ZSTD_CHUNK_BYTES });
      compressed = (async () => {
        for await (const out of made as AsyncIterable<Buffer>) await store(out);
      })();
      compressed.catch(() => stop.abort());
      return (compress = made);
    };
    // The image's zstd compressed it already (a frame's magic number first), or tar's bytes come as they are.
    let mode: 'frames' | 'tar' | undefined;
    const stderr = new BoundedText(STDERR_KEPT_BYTES);
    let resumed = false;
    const resume = async () => {
      if (resumed) return;
      resumed = true;
      await this.#resume(row.sandbox_id);
    };
    // A copy written straight to the store's file by the host's zstd is counted by the file's size,
    // as it grows, while that copy runs.
    const file = this.#deps.runtime.execBeside ? upload.file : undefined;
    const direct = file && {
      fd: file.fd,
      watch: () => {
        const timer = setInterval(() => {
          void file.follow().then(
            (size) => {
              if (size <= roomBytes || overLimit) return;
              overLimit = true;
              stop.abort();
            },
            () => undefined,
          );
        }, ROOM_CHECK_MS);
        return () => clearInterval(timer);
      },
    };
    try {
      const { result, direct: wroteFile } = await this.#runCopy(
        row.sandbox_id,
        {
          timeoutMs,
          signal: stop.signal,
          onStdout: (chunk) => {
            mode ??= isZstdFrame(chunk) ? 'frames' : 'tar';
            return mode === 'frames' ? store(chunk) : written(compressor(), chunk);
          },
          onStderr: (chunk) => stderr.push(chunk),
        },
        direct,
      );
      if (wroteFile) {
        sizeBytes = await file!.follow();
        if (sizeBytes > roomBytes) overLimit = true;
      }
      // Killed at its timeout (or by a signal): the take's own exit never continued what it stopped.
      if (result.timedOut || result.exitCode === null) await resume();
      compress?.end();
      await compressed.catch((err: unknown) => {
        if (!overLimit) throw err;
      });
      if (overLimit) throw storageLimit(this.#options.PADDOCK_QUOTA_SNAPSHOT_BYTES - roomBytes, this.#options.PADDOCK_QUOTA_SNAPSHOT_BYTES);
      if (result.timedOut) throw new ApiError('operation_timed_out', `The workspace was not copied within ${Math.ceil(timeoutMs / 1000)} s.`);
      if (result.exitCode === NO_WORKSPACE_EXIT) throw new ApiError('file_not_found', 'The sandbox has no /workspace to snapshot.');
      // tar's 1: a file changed as it was read; the archive is whole all the same.
      const tarExit = /(?:^|\n)tar=([0-9]{1,3})\n?$/.exec(stderr.tail())?.[1];
      if (result.exitCode !== 0 || (tarExit !== '0' && tarExit !== '1')) {
        throw new Error(`the workspace's copy failed (exit ${String(result.exitCode ?? result.signal)}, tar ${tarExit ?? 'unknown'}): ${stderr.text()}`);
      }
      const sha256 = wroteFile ? await file!.sha256() : hash.digest();
      await upload.commit();
      const members = /^members=([0-9]{1,12})$/m.exec(stderr.text())?.[1];
      return { sizeBytes, files: Number(members ?? 0), sha256 };
    } catch (err) {
      compress?.destroy();
      await upload.abort();
      // The take's connection was lost, or the copy stopped it (past the account's room): whatever it stopped runs again.
      if (!(err instanceof SandboxGoneError)) await resume();
      if (err instanceof SandboxGoneError) throw new ApiError('sandbox_not_running', `Sandbox ${row.sandbox_id} ended while its workspace was copied.`);
      throw err;
    }
  }

  /**
   * The copy's run: beside the sandbox where the runtime can (the host's tar and zstd, on the
   * host's CPUs, the sandbox held frozen by HOLD_SCRIPT meanwhile), its output written straight to
   * `file` where there is one (answered `direct`), watched by its `watch` while it runs, else to
   * `request`'s callbacks; else in the sandbox (TAKE_SCRIPT, on its own CPU), as on a runtime
   * without a host or a host without zstd.
   */
  async #runCopy(
    sandboxId: string,
    request: Pick<ExecRequest, 'timeoutMs' | 'signal' | 'onStdout' | 'onStderr'>,
    file: { fd: number; watch(): () => void } | undefined,
  ): Promise<{ result: ExecResult; direct: boolean }> {
    const runtime = this.#deps.runtime;
    const deadline = Date.now() + request.timeoutMs;
    const inside = async () => ({
      result: await runtime.exec(sandboxId, { argv: ['/bin/sh', '-c', TAKE_SCRIPT, 'paddock-snapshot'], cwd: '/', env: {}, ...request, timeoutMs: Math.max(1000, deadline - Date.now()) }),
      direct: false,
    });
    if (!runtime.execBeside) return inside();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let frozen!: () => void;
    const isFrozen = new Promise<'frozen'>((resolve) => (frozen = () => resolve('frozen')));
    let said = '';
    const hold = runtime.exec(sandboxId, {
      argv: ['/bin/sh', '-c', HOLD_SCRIPT, 'paddock-hold'],
      cwd: '/',
      env: {},
      timeoutMs: request.timeoutMs,
      ...(request.signal ? { signal: request.signal } : {}),
      // Held open until the copy is done, then a line: the hold's cue to continue what it stopped
      // (its stdin's end may not come while it runs: HOLD_SCRIPT).
      stdin: (async function* () {
        await released;
        yield RELEASE_LINE;
      })(),
      onStdout: (chunk) => {
        said = (said + Buffer.from(chunk).toString('latin1')).slice(-2 * FROZEN_LINE.length);
        if (said.includes(`${FROZEN_LINE}\n`)) frozen();
      },
    });
    let first: 'frozen' | ExecResult;
    try {
      first = await Promise.race([isFrozen, hold]);
    } catch (err) {
      release();
      throw err;
    }
    if (first !== 'frozen') {
      release();
      // A freeze not whole (a fork bomb): the copy is the sandbox's own, where nothing it does reaches outside it.
      return first.exitCode === HOLD_NOT_FROZEN_EXIT ? inside() : { result: first, direct: false };
    }
    let beside: ExecResult;
    const unwatch = file?.watch();
    try {
      beside = await runtime.execBeside(sandboxId, {
        argv: ['/bin/sh', '-c', COPY_BESIDE_SCRIPT, 'paddock-copy'],
        env: { PATH: '/usr/bin:/bin' },
        timeoutMs: Math.max(1000, deadline - Date.now()),
        ...(request.signal ? { signal: request.signal } : {}),
        ...(file ? { stdoutFd: file.fd } : request.onStdout ? { onStdout: request.onStdout } : {}),
        ...(request.onStderr ? { onStderr: request.onStderr } : {}),
      });
    } finally {
      unwatch?.();
      release();
      // The hold's own exit continues what it stopped; killed instead, they are continued here.
      const held = await hold.catch(() => undefined);
      if (held && (held.timedOut || held.exitCode === null)) await this.#resume(sandboxId);
    }
    // A host without zstd (the script said so before anything else).
    if (beside.exitCode === NO_ZSTD_EXIT) return inside();
    return { result: beside, direct: file !== undefined };
  }

  /** Every stopped process of the sandbox continued: best effort, the sandbox may have ended meanwhile. */
  async #resume(sandboxId: string): Promise<void> {
    await this.#deps.runtime.exec(sandboxId, { argv: ['/bin/sh', '-c', RESUME_SCRIPT, 'paddock-resume'], cwd: '/', env: {}, timeoutMs: RESUME_TIMEOUT_MS }).catch(() => undefined);
  }

  /**
   * Fills a new sandbox's workspace from the snapshot, before the sandbox runs (restore.ts):
   * beside it where the runtime can, else decompressed by the image's zstd where it has one, else
   * here. Throws SnapshotRestoreError when it never can
   * (gone, or damaged: its bytes are not those written); any other error may pass on a retry.
   */
  async restore(accountId: string, sandboxId: string, snapshotId: string, timeoutMs: number): Promise<void> {
    const row = isId('snap', snapshotId) ? await readOwnSnapshot(this.#deps.em, accountId, snapshotId) : undefined;
    if (!row || row.status !== 'ready' || !row.sha256) throw new SnapshotRestoreError('snapshot_not_found', `Snapshot ${snapshotId} is gone.`);
    const deadline = Date.now() + timeoutMs;
    if ((await extractBeside(this.#deps, row, sandboxId, timeoutMs)) === 'done') return;
    const inSandbox = await extract(this.#deps, row, sandboxId, 'sandbox', Math.max(1000, deadline - Date.now()));
    // The image has no zstd (the script said so before it read a byte): decompressed here instead.
    if (inSandbox === 'no-zstd') await extract(this.#deps, row, sandboxId, 'here', Math.max(1000, deadline - Date.now()));
  }

  /** The account's snapshot a new sandbox may start from: 404 for none, 409 for one not ready. */
  async source(accountId: string, snapshotId: string): Promise<SnapshotRow> {
    const row = await this.get(accountId, snapshotId);
    if (row.status !== 'ready') throw new ApiError('snapshot_not_ready', `Snapshot ${snapshotId} is ${row.status}: a sandbox starts only from a ready one.`);
    return row;
  }

  async get(accountId: string, snapshotId: string): Promise<SnapshotRow> {
    const row = isId('snap', snapshotId) ? await readOwnSnapshot(this.#deps.em, accountId, snapshotId) : undefined;
    if (!row) throw new ApiError('snapshot_not_found', `No snapshot ${snapshotId}.`);
    return row;
  }

  async list(accountId: string, page: { after?: string; limit: number }): Promise<{ snapshots: SnapshotRow[]; next?: string }> {
    const found = page.after === undefined || isId('snap', page.after) ? await listOwnSnapshots(this.#deps.em, accountId, page) : undefined;
    if (!found) throw new ApiError('invalid_request', `after: ${page.after} is not one of the account's snapshots.`);
    return found;
  }

  /** Deletes the snapshot and its bytes. */
  async remove(accountId: string, snapshotId: string): Promise<void> {
    const gone = isId('snap', snapshotId) ? await deleteSnapshot(this.#deps.em, accountId, snapshotId) : undefined;
    if (!gone) throw new ApiError('snapshot_not_found', `No snapshot ${snapshotId}.`);
    await this.#deps.store.remove(snapshotId);
    await this.#deps.announcer.announce([gone.event]);
  }

  /**
   * Deletes snapshots past their retention, and fails those whose copy was abandoned (the process
   * taking it died: pending past the longest a copy may take), their partial bytes removed.
   */
  async sweep(batch = 100): Promise<{ expired: number; abandoned: number }> {
    const expired = await expiredSnapshots(this.#deps.em, batch);
    for (const row of expired) {
      const gone = await deleteSnapshot(this.#deps.em, row.account_id, row.id);
      await this.#deps.store.remove(row.id);
      if (gone) await this.#deps.announcer.announce([gone.event]);
    }
    const before = new Date(Date.now() - this.#options.PADDOCK_ARCHIVE_TIMEOUT_SECONDS * 1000 - ABANDONED_AFTER_MS);
    const abandoned = await stalePendingSnapshots(this.#deps.em, before, batch);
    for (const row of abandoned) {
      await this.#deps.store.remove(row.id);
      await this.#deps.announcer.announce([await failSnapshot(this.#deps.em, row, 'internal_error', 'The copy of the workspace was abandoned.')]);
    }
    return { expired: expired.length, abandoned: abandoned.length };
  }
}

function storageLimit(usedBytes: number, limitBytes: number): ApiError {
  return new ApiError('snapshot_storage_limit_reached', `The account's snapshots may hold ${limitBytes} bytes; they hold ${usedBytes}, and this one would pass it.`, {
    extra: { limitBytes, usedBytes },
  });
}
