import { PassThrough, type Readable } from 'node:stream';
import { ApiError } from '../../../shared/errors.ts';
import { inSandboxError } from '../../../shared/sandboxes/running.ts';
import type { AppDeps } from '../../context.ts';
import { drained } from '../streaming.ts';
import { failureError, markerOf, timeoutError } from './errors.ts';
import { MAX_STDERR_BYTES } from './limits.ts';
import { MARKER_EXIT } from './scripts.ts';

// A script's standard output streamed out of the sandbox to a client (an archive, a file's raw
// bytes): at the client's pace, at the account's share of the process's bulk transfers
// (bulk-transfers.ts), and cut, never ended, when it breaks off.

/** The longest first line a script may open its output with. */
const MAX_HEADER_BYTES = 64;

export interface Download<H> {
  stream: Readable;
  /** Settles once the output is whole (true) or broken off (false: the response must be cut, not ended). */
  complete: Promise<boolean>;
  /** What the script's first line said, for a download that opens with one. */
  header: H;
}

export interface DownloadSpec<H> {
  /** The script and its arguments. */
  argv: string[];
  /** The path downloaded, for errors. */
  path: string;
  /** The download's name in logs and errors: "archive", "raw file". */
  name: string;
  timeoutMs: number;
  /** Whether an exit code ends a whole output. */
  wholeExit: (exitCode: number | null) => boolean;
  /**
   * For a script whose output opens with one line about it (a raw read's size and range): that
   * line read, or an Error when it is not what the script writes. Without it, the header is undefined.
   */
  header?: (line: string) => H | Error;
  /** The error of a failed script that wrote no marker; a plain Error (a 500) when omitted. */
  unmarked?: (stderr: string) => Error | undefined;
}

/**
 * Runs the script and resolves once its output begins (after its header line, for one that has
 * one), so that a path that cannot be read answers a proper error; stops when `signal` aborts.
 */
export function download<H = undefined>(deps: AppDeps, accountId: string, sandboxId: string, spec: DownloadSpec<H>, signal: AbortSignal): Promise<Download<H>> {
  const stream = new PassThrough();
  const abort = new AbortController();
  const writeTimeoutMs = deps.config.PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS * 1000;
  const transfer = deps.bulkTransfers.open(accountId);
  const write = (chunk: Uint8Array): void | Promise<void> => {
    if (stream.destroyed || stream.write(chunk)) return;
    return drained(stream, writeTimeoutMs, () => abort.abort());
  };
  let stderr = '';
  let pending: Buffer | undefined = spec.header ? Buffer.alloc(0) : undefined;
  return new Promise<Download<H>>((resolve, reject) => {
    let started: ((complete: boolean) => void) | undefined;
    const begin = (header: H): void => {
      const complete = new Promise<boolean>((done) => (started = done));
      resolve({ stream, complete, header });
    };
    /** The output past the header line, once it is read; undefined while it is not. */
    const pastHeader = (data: Buffer): Buffer | undefined => {
      if (!pending) return data;
      pending = Buffer.concat([pending, data]);
      const nl = pending.indexOf(10);
      if (nl < 0) {
        if (pending.length > MAX_HEADER_BYTES) abort.abort();
        return undefined;
      }
      const line = pending.subarray(0, nl).toString('latin1');
      const rest = pending.subarray(nl + 1);
      pending = undefined;
      const header = spec.header!(line);
      if (header instanceof Error) {
        reject(header);
        abort.abort();
        return undefined;
      }
      begin(header);
      return rest;
    };
    const run = deps.runtime.exec(sandboxId, {
      argv: spec.argv,
      timeoutMs: spec.timeoutMs,
      signal: AbortSignal.any([signal, abort.signal]),
      onStdout: (chunk) => {
        const data = pastHeader(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if (!data || data.length === 0) return;
        if (!started) begin(undefined as H);
        const turn = transfer.pass(data.byteLength);
        return turn ? turn.then(() => write(data)) : write(data);
      },
      onStderr: (chunk) => {
        if (stderr.length < MAX_STDERR_BYTES) stderr += Buffer.from(chunk).toString('utf8');
      },
    });
    run.then(
      () => transfer.close(),
      () => transfer.close(),
    );
    run.then(
      (result) => {
        const whole = !result.timedOut && spec.wholeExit(result.exitCode) && !abort.signal.aborted && !signal.aborted;
        if (started) {
          if (whole) stream.end();
          else deps.log.warn({ sandboxId, exitCode: result.exitCode, signal: result.signal, stderr: stderr.slice(0, 500) }, `${spec.name} download broken off`);
          return started(whole);
        }
        const reason = result.exitCode === MARKER_EXIT ? markerOf(stderr) : undefined;
        if (reason) reject(failureError(reason, spec.path, stderr));
        else if (signal.aborted) reject(new ApiError('invalid_request', `The client went away before the ${spec.name} began.`));
        else if (result.timedOut) reject(timeoutError(spec.timeoutMs));
        else reject(spec.unmarked?.(stderr) ?? new Error(`${spec.name} script failed: exit ${String(result.exitCode)}: ${stderr.slice(0, 500)}`));
      },
      (err: unknown) => {
        if (started) return started(false);
        reject(inSandboxError(err, sandboxId, 'files'));
      },
    );
  });
}
