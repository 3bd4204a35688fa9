import type { z } from 'zod';
import type { ExecResult } from '../../routes/exec/schema.ts';
import { OutputStream } from '../../../shared/exec/output.ts';
import type { AppDeps } from '../../context.ts';

/** What running a command takes: the runtime, the account's output budget, the output cap. */
export type ExecRunning = Pick<AppDeps, 'runtime' | 'outputBudget'> & { config: Pick<AppDeps['config'], 'PADDOCK_EXEC_OUTPUT_MAX_BYTES'> };
import type { PreparedExec } from './prepare.ts';
import { inSandboxError } from '../../../shared/sandboxes/running.ts';
import { brokerBeforeStart } from '../../../shared/secrets/brokering.ts';

/** How a command ended: the exec result, as its schema has it, without the output itself. */
export type ExecOutcome = Omit<z.infer<typeof ExecResult>, 'stdout' | 'stderr'>;

export interface OutputSink<T = string> {
  /** A returned promise holds the command's output until it is on its way to the client. */
  stdout(data: T): void | Promise<void>;
  stderr(data: T): void | Promise<void>;
}

/** A sink of bytes (masked and capped, never decoded here) for runExecBytes. */
export type ByteSink = OutputSink<Buffer>;

// How much a stream may print past its cap before the command is stopped. Output past the cap is
// dropped and flagged; a command that prints a little too much still ends on its own, with its
// exit code, while a flood (`cat /dev/zero`) is stopped instead of costing the host until its
// timeout.
const OVERFLOW_GRACE_BYTES = 64 * 1024;

/**
 * How long a streamed exec's output may be quiet before the bytes held back by the secrets
 * masker (they could begin a secret) are sent anyway. Short enough that nobody sees a lag, long
 * enough that a secret written in one go and split only by the pipe is always whole in a window.
 */
export const STREAM_IDLE_RELEASE_MS = 50;

export interface RunOptions {
  /**
   * Streaming: after this many milliseconds without new output, release what the masker holds
   * back. Unset (a buffered exec, answered whole at the end): held bytes wait for the end.
   */
  idleReleaseMs?: number;
}

/**
 * Runs a prepared command, passing masked, capped, decoded output to the sink as it comes. A
 * command whose output passes the cap on either stream by more than OVERFLOW_GRACE_BYTES is
 * stopped (its whole process tree, as a timeout stops it): signal SIGKILL, the stream flagged
 * truncated.
 */
export async function runExec(
  deps: ExecRunning,
  sandboxId: string,
  prepared: PreparedExec,
  sink: OutputSink,
  signal: AbortSignal,
  options: RunOptions = {},
): Promise<ExecOutcome> {
  // Decoded as it goes out, across chunk boundaries; what a decoder still holds at the end (the
  // start of a character that never came) goes out as U+FFFD.
  const decoders = { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') };
  const text = (name: 'stdout' | 'stderr') => (bytes: Buffer) => {
    const decoded = decoders[name].decode(bytes, { stream: true });
    if (decoded) return sink[name](decoded);
  };
  const outcome = await runExecBytes(deps, sandboxId, prepared, { stdout: text('stdout'), stderr: text('stderr') }, signal, options);
  for (const name of ['stdout', 'stderr'] as const) {
    const rest = decoders[name].decode();
    if (rest) await sink[name](rest);
  }
  return outcome;
}

/** runExec, the output given as bytes (masked and capped), for a sink that decodes them itself. */
export async function runExecBytes(
  deps: ExecRunning,
  sandboxId: string,
  prepared: PreparedExec,
  sink: ByteSink,
  signal: AbortSignal,
  options: RunOptions = {},
): Promise<ExecOutcome> {
  const max = deps.config.PADDOCK_EXEC_OUTPUT_MAX_BYTES;
  const out = new OutputStream(prepared.masks, max);
  const err = new OutputStream(prepared.masks, max);
  const overflow = new AbortController();
  const emit = (bytes: Buffer, to: (b: Buffer) => void | Promise<void>): void | Promise<void> => {
    const limit = max + OVERFLOW_GRACE_BYTES;
    if ((out.received > limit || err.received > limit) && !overflow.signal.aborted) overflow.abort();
    if (bytes.length > 0) return to(bytes);
  };
  const idle = options.idleReleaseMs;
  const timers = new Map<OutputStream, NodeJS.Timeout>();
  let ended = false;
  /** After a chunk: when the masker holds bytes back, they go out once the stream is quiet. */
  const releaseWhenQuiet = (stream: OutputStream, to: (b: Buffer) => void | Promise<void>): void => {
    clearTimeout(timers.get(stream));
    timers.delete(stream);
    if (idle === undefined || stream.held === 0) return;
    const timer = setTimeout(() => {
      timers.delete(stream);
      if (!ended) void emit(stream.release(), to);
    }, idle);
    timer.unref();
    timers.set(stream, timer);
  };
  const budget = deps.outputBudget;
  const onChunk = (stream: OutputStream, to: (b: Buffer) => void | Promise<void>) => (chunk: Uint8Array) => {
    const sent = emit(stream.push(chunk), to);
    releaseWhenQuiet(stream, to);
    // Past the account's budget, the next chunk waits until this one is paid for.
    const paid = budget.spend(prepared.accountId, chunk.length);
    return paid && sent ? Promise.all([paid, sent]).then(() => undefined) : (paid ?? sent);
  };
  let result;
  try {
    await brokerBeforeStart(deps.runtime, sandboxId, prepared.brokering);
    result = await deps.runtime.exec(sandboxId, {
      argv: prepared.argv,
      cwd: prepared.cwd,
      env: prepared.env,
      stdin: prepared.stdin,
      timeoutMs: prepared.timeoutMs,
      signal: AbortSignal.any([signal, overflow.signal]),
      onStdout: onChunk(out, sink.stdout),
      onStderr: onChunk(err, sink.stderr),
    });
  } catch (error) {
    throw inSandboxError(error, sandboxId, 'exec');
  } finally {
    ended = true;
    for (const timer of timers.values()) clearTimeout(timer);
  }
  // The end, however it came (exit, timeout, kill, the client gone): everything held goes out.
  await emit(out.end(), sink.stdout);
  await emit(err.end(), sink.stderr);
  return {
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    durationMs: Math.round(result.durationMs),
    stdoutTruncated: out.truncated,
    stderrTruncated: err.truncated,
  };
}
