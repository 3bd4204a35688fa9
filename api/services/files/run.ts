import type { ExecStdin } from '../../../shared/runtime/types.ts';
import type { AppDeps } from '../../context.ts';
import { failureError, markerOf, timeoutError, unmarkedFailureError } from './errors.ts';
import { MAX_STDERR_BYTES } from './limits.ts';
import { MARKER_EXIT } from './scripts.ts';
import { inSandboxError } from '../../../shared/sandboxes/running.ts';

export interface ScriptOptions {
  /** A stream is read as the script reads it (an archive upload). */
  stdin?: ExecStdin;
  timeoutMs: number;
  /** Stdout kept at most; more stops the script (`stopped`). */
  maxStdoutBytes: number;
  /** Sees stdout as it comes (instead of keeping it); answering false stops the script. */
  onStdout?: (chunk: Buffer) => boolean;
}

export interface ScriptResult {
  exitCode: number | null;
  stdout: Buffer;
  stderr: string;
  timedOut: boolean;
  /** The API stopped it: enough output (a cap), or more than maxStdoutBytes. */
  stopped: boolean;
}

/** Runs one of scripts.ts's scripts in the sandbox, its arguments as positional parameters. */
export async function runScript(
  deps: Pick<AppDeps, 'runtime'>,
  sandboxId: string,
  script: string,
  args: string[],
  options: ScriptOptions,
): Promise<ScriptResult> {
  if (args.some((a) => a.includes('\0'))) throw new TypeError('script arguments cannot contain NUL');
  const abort = new AbortController();
  const stdout: Buffer[] = [];
  let stdoutBytes = 0;
  const stderr: Buffer[] = [];
  let stderrBytes = 0;
  let stopped = false;
  const stop = () => {
    stopped = true;
    abort.abort();
  };
  try {
    const result = await deps.runtime.exec(sandboxId, {
      argv: ['/bin/sh', '-c', script, 'sh', ...args],
      ...(options.stdin ? { stdin: options.stdin } : {}),
      timeoutMs: options.timeoutMs,
      signal: abort.signal,
      onStdout: (chunk) => {
        if (stopped) return;
        const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        stdoutBytes += buf.length;
        if (options.onStdout) {
          if (!options.onStdout(buf)) stop();
        } else {
          stdout.push(buf);
        }
        if (stdoutBytes > options.maxStdoutBytes) stop();
      },
      onStderr: (chunk) => {
        if (stderrBytes >= MAX_STDERR_BYTES) return;
        stderr.push(Buffer.from(chunk).subarray(0, MAX_STDERR_BYTES - stderrBytes));
        stderrBytes += chunk.byteLength;
      },
    });
    return {
      exitCode: result.exitCode,
      stdout: Buffer.concat(stdout),
      stderr: Buffer.concat(stderr).toString('utf8'),
      timedOut: result.timedOut,
      stopped,
    };
  } catch (err) {
    throw inSandboxError(err, sandboxId, 'files');
  }
}

/**
 * For operations that must finish (view, create, edit, ls): the error the script reported, a
 * timeout, or any other failure become the answer; a successful run is returned.
 */
export function expectSuccess(result: ScriptResult, path: string, timeoutMs: number): ScriptResult {
  throwIfFailed(result, path);
  if (result.timedOut) throw timeoutError(timeoutMs);
  if (result.exitCode !== 0 && !result.stopped) {
    throw unmarkedFailureError(result.stderr, path) ?? new Error(`file script failed: exit ${String(result.exitCode)}: ${result.stderr.slice(0, 500)}`);
  }
  return result;
}

/** Throws the error a script reported with its marker, if it did. */
export function throwIfFailed(result: ScriptResult, path: string): void {
  if (result.exitCode !== MARKER_EXIT) return;
  const reason = markerOf(result.stderr);
  if (reason) throw failureError(reason, path, result.stderr);
}
