import { createHash, timingSafeEqual } from 'node:crypto';
import { Transform } from 'node:stream';
import { constants as zlib, createZstdDecompress } from 'node:zlib';
import type { ExecResult, SandboxRuntime } from '../runtime/types.ts';
import type { SnapshotRow } from '../repositories/snapshots.ts';
import type { SnapshotStore } from './store.ts';
import { BoundedText, STDERR_KEPT_BYTES } from './bounded-text.ts';
import { NO_ZSTD_EXIT, RESTORE_BESIDE_SCRIPT, RESTORE_SCRIPT } from './scripts.ts';
import { SNAPSHOT_CORRUPT_MESSAGE, SnapshotRestoreError } from './restore-error.ts';

// A snapshot's bytes back into a new sandbox's workspace, before it runs (Snapshots.restore), each
// byte checked against the size and SHA-256 taken as it was written.

export interface RestoreDeps {
  runtime: Pick<SandboxRuntime, 'exec' | 'execBeside'>;
  store: SnapshotStore;
}

/**
 * The largest window a frame may ask of the decompressor: 8 MiB. The frames were made in the
 * sandbox (its zstd): one asking for zstd's default most, 128 MiB, would make each restore that
 * much of the worker's memory. zstd -3 asks for 2 MiB.
 */
const ZSTD_WINDOW_LOG_MAX = 23;
/** Smaller on the way out: what is decompressed waits for the sandbox's tar (1 MiB held the worker 65 MB up, 256 KiB 35). */
const ZSTD_DECOMPRESS_CHUNK_BYTES = 256 * 1024;

/** zstd's own refusal of its input (ZSTD_error_checksum_wrong, ZSTD_error_corruption_detected…): the bytes are not a whole frame. */
const isZstdError = (err: unknown) => typeof (err as NodeJS.ErrnoException | undefined)?.code === 'string' && (err as NodeJS.ErrnoException).code!.startsWith('ZSTD_error_');

const CORRUPT = {
  missing: 'its stored copy is missing',
  damaged: 'its stored copy does not decompress',
  altered: 'its stored copy is not the one written',
} as const;

/** The snapshot can never be restored, and why. */
const corrupt = (why: keyof typeof CORRUPT) => new SnapshotRestoreError('snapshot_corrupt', `${SNAPSHOT_CORRUPT_MESSAGE}: ${CORRUPT[why]}.`);

/**
 * The extract beside the sandbox where the runtime and the store allow it: the host's zstd and
 * tar read the stored file by its descriptor (no byte of it through this process, but the
 * digest's, read into one buffer as they go). `unavailable` where they do not, or the host has
 * no zstd.
 */
export async function extractBeside(deps: RestoreDeps, row: SnapshotRow, sandboxId: string, timeoutMs: number): Promise<'done' | 'unavailable'> {
  const { runtime, store } = deps;
  if (!runtime.execBeside || !store.open) return 'unavailable';
  const file = await store.open(row.id).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') throw corrupt('missing');
    throw err;
  });
  const stderr = new BoundedText(STDERR_KEPT_BYTES);
  const said = new BoundedText(STDERR_KEPT_BYTES);
  let result: ExecResult;
  let stored: { sizeBytes: number; sha256: Buffer };
  try {
    // Both to their end, whichever fails: the extract is never left running after its restore gave up.
    const [ran, digested] = await Promise.allSettled([
      runtime.execBeside(sandboxId, {
        argv: ['/bin/sh', '-c', RESTORE_BESIDE_SCRIPT, 'paddock-restore'],
        env: { PATH: '/usr/bin:/bin' },
        stdinFd: file.fd,
        timeoutMs,
        onStdout: (chunk) => said.push(chunk),
        onStderr: (chunk) => stderr.push(chunk),
      }),
      file.digest(),
    ]);
    if (ran.status === 'rejected') throw ran.reason;
    if (digested.status === 'rejected') throw digested.reason;
    [result, stored] = [ran.value, digested.value];
  } finally {
    await file.close();
  }
  if (result.exitCode === NO_ZSTD_EXIT) return 'unavailable';
  // Checked whatever tar made of them: a sandbox whose restore fails never runs.
  if (stored.sizeBytes !== Number(row.size_bytes) || !timingSafeEqual(stored.sha256, row.sha256!)) {
    throw corrupt('altered');
  }
  if (result.timedOut) throw new Error(`restoring snapshot ${row.id} did not finish within ${timeoutMs / 1000} s`);
  const zstdExit = /(?:^|\n)zstd=([0-9]{1,3})\n?$/.exec(stderr.tail())?.[1];
  // The bytes are the ones written: a zstd that refuses them met frames past its window.
  if (zstdExit !== '0' && !/No space left on device/.test(said.text())) {
    throw corrupt('damaged');
  }
  if (result.exitCode !== 0) throw new Error(`restoring snapshot ${row.id} failed (exit ${String(result.exitCode ?? result.signal)}): ${said.text()}${stderr.text().replace(/(?:^|\n)zstd=[0-9]+\n?$/, '')}`);
  return 'done';
}

/** One try at the extract, the stored bytes streamed to the sandbox (`where` says who decompresses them) and checked as they go. */
export async function extract(deps: RestoreDeps, row: SnapshotRow, sandboxId: string, where: 'sandbox' | 'here', timeoutMs: number): Promise<'done' | 'no-zstd'> {
  const source = deps.store.read(row.id);
  const hash = createHash('sha256');
  let sizeBytes = 0;
  let unreadable: 'missing' | 'damaged' | undefined;
  source.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') unreadable = 'missing';
  });
  // The stored bytes digested as they are read.
  const digested = source.pipe(
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        sizeBytes += chunk.byteLength;
        hash.update(chunk);
        done(null, chunk);
      },
    }),
  );
  source.on('error', (err) => digested.destroy(err));
  let stdin: NodeJS.ReadableStream = digested;
  if (where === 'here') {
    const decompress = createZstdDecompress({ chunkSize: ZSTD_DECOMPRESS_CHUNK_BYTES, params: { [zlib.ZSTD_d_windowLogMax]: ZSTD_WINDOW_LOG_MAX } });
    digested.pipe(decompress);
    digested.on('error', (err) => decompress.destroy(err));
    decompress.on('error', (err: NodeJS.ErrnoException) => {
      if (isZstdError(err)) unreadable ??= 'damaged';
    });
    stdin = decompress;
  }
  const stderr = new BoundedText(STDERR_KEPT_BYTES);
  let result;
  try {
    result = await deps.runtime.exec(sandboxId, {
      argv: ['/bin/sh', '-c', RESTORE_SCRIPT, 'paddock-restore', where === 'sandbox' ? 'zstd' : 'tar'],
      cwd: '/',
      env: {},
      stdin: stdin as AsyncIterable<Uint8Array>,
      timeoutMs,
      onStderr: (chunk) => stderr.push(chunk),
    });
  } catch (err) {
    if (isZstdError(err)) unreadable ??= 'damaged';
    if (unreadable === 'missing') throw corrupt('missing');
    if (unreadable === 'damaged') throw corrupt('damaged');
    throw err;
  } finally {
    source.destroy();
    digested.destroy();
    if (stdin !== digested) (stdin as Transform).destroy();
  }
  if (result.exitCode === NO_ZSTD_EXIT) return 'no-zstd';
  if (unreadable === 'missing') throw corrupt('missing');
  const whole = sizeBytes === Number(row.size_bytes) && timingSafeEqual(hash.digest(), row.sha256!);
  // A full disk stops tar before the end as well: that is the sandbox's, not the snapshot's.
  if (!whole && !/No space left on device/.test(stderr.text())) {
    throw corrupt('altered');
  }
  if (result.timedOut) throw new Error(`restoring snapshot ${row.id} did not finish within ${timeoutMs / 1000} s`);
  // The bytes are the ones written, so a zstd that refuses them is no damage of theirs either.
  if (result.exitCode !== 0) throw new Error(`restoring snapshot ${row.id} failed (exit ${String(result.exitCode ?? result.signal)}): ${stderr.text()}`);
  return 'done';
}
