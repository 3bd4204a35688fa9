import { ApiError } from '../../../shared/errors.ts';
import { OutputStream } from '../../../shared/exec/output.ts';
import { SandboxGoneError } from '../../../shared/runtime/types.ts';
import type { AppDeps } from '../../context.ts';
import type { PreparedExec } from './prepare.ts';

export interface ExecOutcome {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

export interface OutputSink {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Runs a prepared command, passing masked, capped, decoded output to the sink as it comes. */
export async function runExec(
  deps: AppDeps,
  sandboxId: string,
  prepared: PreparedExec,
  sink: OutputSink,
  signal: AbortSignal,
): Promise<ExecOutcome> {
  const max = deps.config.PADDOCK_EXEC_OUTPUT_MAX_BYTES;
  const out = new OutputStream(prepared.secrets, max);
  const err = new OutputStream(prepared.secrets, max);
  const emit = (text: string, to: (t: string) => void) => {
    if (text) to(text);
  };
  let result;
  try {
    result = await deps.runtime.exec(sandboxId, {
      argv: prepared.argv,
      cwd: prepared.cwd,
      env: prepared.env,
      stdin: prepared.stdin,
      timeoutMs: prepared.timeoutMs,
      signal,
      onStdout: (chunk) => emit(out.push(chunk), sink.stdout),
      onStderr: (chunk) => emit(err.push(chunk), sink.stderr),
    });
  } catch (error) {
    if (error instanceof SandboxGoneError) {
      throw new ApiError('sandbox_not_running', `Sandbox ${sandboxId} is no longer running.`);
    }
    throw error;
  }
  emit(out.end(), sink.stdout);
  emit(err.end(), sink.stderr);
  return {
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    durationMs: Math.round(result.durationMs),
    stdoutTruncated: out.truncated,
    stderrTruncated: err.truncated,
  };
}
