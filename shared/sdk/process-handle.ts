import type { PaddockClient } from './client.ts';
import { PaddockApiError } from './errors.ts';
import type { ProcessSignal } from './types.ts';

/** How a command ended: its exit code (null when a signal ended it) and its output. */
export interface CommandResult {
  /** The exit code; null when a signal ended the command. */
  exitCode: number | null;
  /** The signal that ended it (e.g. SIGKILL), else null. */
  signal: string | null;
  /** All of its standard output, as text. */
  stdout: string;
  /** All of its standard error, as text. */
  stderr: string;
  /** How long it ran; 0 for a background process (its start and end are not measured here). */
  durationMs: number;
  /** It ran past its `timeout` and was killed. */
  timedOut: boolean;
}

/** Called with each chunk of output as it arrives. */
export type OutputHandler = (data: string) => void | Promise<void>;

/** A background process started by `sbx.commands.run(cmd, { background: true })`. */
export class CommandHandle {
  /** The process id (proc_…). */
  readonly id: string;
  readonly #client: PaddockClient;
  readonly #sandboxId: string;
  readonly #onStdout: OutputHandler | undefined;
  readonly #onStderr: OutputHandler | undefined;

  /** @internal Made by Commands.run. */
  constructor(client: PaddockClient, sandboxId: string, id: string, handlers: { onStdout?: OutputHandler; onStderr?: OutputHandler } = {}) {
    this.#client = client;
    this.#sandboxId = sandboxId;
    this.id = id;
    this.#onStdout = handlers.onStdout;
    this.#onStderr = handlers.onStderr;
  }

  /**
   * Waits for the process to end, calling the handlers given to `run` with its output (all of it
   * the server kept, from the start), and answers how it ended.
   */
  async wait(opts: { signal?: AbortSignal } = {}): Promise<CommandResult> {
    const result: CommandResult = { exitCode: null, signal: null, stdout: '', stderr: '', durationMs: 0, timedOut: false };
    for await (const event of this.#client.processOutput(this.#sandboxId, this.id, { follow: true, signal: opts.signal })) {
      if (event.type === 'stdout') {
        result.stdout += event.data;
        await this.#onStdout?.(event.data);
      } else if (event.type === 'stderr') {
        result.stderr += event.data;
        await this.#onStderr?.(event.data);
      } else if (event.type === 'exit') {
        result.exitCode = event.exitCode;
        result.signal = event.signal;
      } else {
        // The server failed after the stream had started: its status line was already sent as 200.
        throw new PaddockApiError({ status: 500, code: event.code, detail: event.detail });
      }
    }
    return result;
  }

  /** Signals the process group: TERM (default) or KILL. One that has ended is left as it is. */
  kill(signal: ProcessSignal = 'TERM'): Promise<void> {
    return this.#client.stopProcess(this.#sandboxId, this.id, signal);
  }

  /** The output kept so far, without waiting for the process to end. */
  async logs(): Promise<{ stdout: string; stderr: string }> {
    const out = { stdout: '', stderr: '' };
    for await (const event of this.#client.processOutput(this.#sandboxId, this.id)) {
      if (event.type === 'stdout') out.stdout += event.data;
      else if (event.type === 'stderr') out.stderr += event.data;
    }
    return out;
  }

  /** Writes to the process's standard input (it stays open for the next write). */
  sendStdin(data: string): Promise<void> {
    return this.#client.writeProcessStdin(this.#sandboxId, this.id, data);
  }
}
