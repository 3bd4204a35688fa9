import type { PaddockClient } from './client.ts';
import { PaddockApiError } from './errors.ts';
import { CommandHandle, type CommandResult, type OutputHandler } from './process-handle.ts';
import type { ExecInput } from './types.ts';

/** Options of `sbx.commands.run`. */
export interface CommandStartOpts {
  /** The working directory. */
  cwd?: string;
  /** Variables added to the command's environment. */
  env?: Record<string, string>;
  /** Sent to the command's standard input, which is then closed (not with `background`). */
  stdin?: string;
  /** Seconds before the command is killed (`timedOut: true`); not with `background`. */
  timeout?: number;
  /** Called with each chunk of stdout as it arrives (the command's output is streamed). */
  onStdout?: OutputHandler;
  /** Called with each chunk of stderr as it arrives (the command's output is streamed). */
  onStderr?: OutputHandler;
  /** Start it in the background and answer a handle at once. */
  background?: boolean;
  /** Aborting closes the connection, and the server kills a foreground command. */
  signal?: AbortSignal;
}

/** Runs commands in one sandbox: `sbx.commands`. */
export class Commands {
  readonly #client: PaddockClient;
  readonly #sandboxId: string;

  /** @internal Made by Sandbox. */
  constructor(client: PaddockClient, sandboxId: string) {
    this.#client = client;
    this.#sandboxId = sandboxId;
  }

  /**
   * Runs `cmd` (a string through `sh -c`, an array as argv) and answers when it ends; a non-zero
   * exit is a result, not an error. With `background: true` it answers a CommandHandle at once.
   */
  run(cmd: string | string[], opts: CommandStartOpts & { background: true }): Promise<CommandHandle>;
  run(cmd: string | string[], opts?: CommandStartOpts & { background?: false }): Promise<CommandResult>;
  run(cmd: string | string[], opts?: CommandStartOpts): Promise<CommandResult | CommandHandle>;
  async run(cmd: string | string[], opts: CommandStartOpts = {}): Promise<CommandResult | CommandHandle> {
    const command = typeof cmd === 'string' ? ['sh', '-c', cmd] : cmd;
    const call = { signal: opts.signal };
    if (opts.background) {
      const started = await this.#client.startProcess(this.#sandboxId, { command, cwd: opts.cwd, env: opts.env }, call);
      return new CommandHandle(this.#client, this.#sandboxId, started.id, opts);
    }
    const input: ExecInput = { command, cwd: opts.cwd, env: opts.env, stdin: opts.stdin, timeoutSeconds: opts.timeout };
    if (!opts.onStdout && !opts.onStderr) {
      const r = await this.#client.exec(this.#sandboxId, input, call);
      return { exitCode: r.exitCode, signal: r.signal, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs, timedOut: r.timedOut };
    }
    const result: CommandResult = { exitCode: null, signal: null, stdout: '', stderr: '', durationMs: 0, timedOut: false };
    for await (const event of this.#client.execStream(this.#sandboxId, input, call)) {
      if (event.type === 'stdout') {
        result.stdout += event.data;
        await opts.onStdout?.(event.data);
      } else if (event.type === 'stderr') {
        result.stderr += event.data;
        await opts.onStderr?.(event.data);
      } else if (event.type === 'exit') {
        Object.assign(result, { exitCode: event.exitCode, signal: event.signal, durationMs: event.durationMs, timedOut: event.timedOut });
      } else {
        // The server failed after the stream had started: its status line was already sent as 200.
        throw new PaddockApiError({ status: 500, code: event.code, detail: event.detail });
      }
    }
    return result;
  }
}
