import type { Command } from 'commander';
import { fieldFlags } from '../output/fields.ts';
import type { ExecInput } from '../api/types.ts';
import { CliError, EXIT_EXEC_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, withExitCode } from '../errors.ts';
import { printResult, say } from '../output/print.ts';
import { apiClient } from '../services/client.ts';
import { bufferedExec, commandOf, exitCodeOf, streamExec } from '../services/exec.ts';
import { startProcess } from '../services/processes.ts';
import { pickSession } from '../services/sessions.ts';
import { readStdin, stdinIsPiped } from '../terminal/stdin.ts';
import { jsonOption, keyValue, positiveNumber, sessionOption } from './options.ts';

interface ExecFlags {
  session?: string;
  timeout?: number;
  cwd?: string;
  env?: Record<string, string>;
  stdin: boolean;
  json?: boolean;
  background?: boolean;
}

export function execCommand(program: Command): void {
  const exec = jsonOption(
    sessionOption(
      program
        .command('exec')
        .summary('run a command in a session, its output streamed live')
        .description(
          'run a command in a session, its output streamed live; exits with its exit code.\n' +
            'One argument is a shell command line (run by /bin/sh -c); several are the program and its arguments.\n' +
            'Piped standard input is passed on to the command. Input and output are UTF-8 text, and a command\'s output\n' +
            'has a limit (1 MiB a stream by default): for binary or large data use `paddock files` (create --from, upload, download).\n' +
            'With --background it is started as a background process and its id (proc_…) printed at once:\n' +
            'see `paddock ps`, `paddock logs` and `paddock kill`.',
        )
        .usage('[options] -- <command> [args...]')
        .argument('<command...>', 'the command and its arguments (put them after --)')
        .option('--timeout <seconds>', 'stop the command after this long (default: the service\'s, 60 s)', positiveNumber)
        .option('--cwd <dir>', 'the working directory (default /workspace)')
        .option('-e, --env <NAME=value>', 'an environment variable (repeatable)', keyValue)
        .option('--no-stdin', 'do not pass standard input on, even when it is piped')
        .option('-b, --background', 'start it in the background and print its process id (no --timeout, no standard input)')
        .passThroughOptions(),
    ),
  );
  fieldFlags(exec, {
    'body.command': '<command>',
    cwd: '--cwd',
    'body.env': '--env',
    timeoutSeconds: '--timeout',
    'body.stdin': 'standard input',
  }).action(async (args: string[], opts: ExecFlags) => {
    const client = apiClient();
    const sessionId = await pickSession(client, opts.session);
    if (opts.background) {
      if (opts.timeout !== undefined) throw new CliError('--timeout does not go with --background: a background process runs until it ends or is killed.');
      const started = await startProcess(client, sessionId, { command: commandOf(args), cwd: opts.cwd, env: opts.env });
      printResult(opts, started, (p) => p.id);
      if (!opts.json) say(`Started in the background; follow it with: paddock logs -f ${started.id}`);
      return;
    }
    const input: ExecInput = { command: commandOf(args), cwd: opts.cwd, env: opts.env, timeoutSeconds: opts.timeout };
    if (opts.stdin && stdinIsPiped()) input.stdin = textOf(await readStdin());

    const controller = new AbortController();
    const onInterrupt = () => controller.abort();
    process.once('SIGINT', onInterrupt);
    try {
      if (opts.json) {
        const result = await bufferedExec(client, sessionId, input, controller.signal);
        printResult(opts, result, () => undefined);
        process.exitCode = exitCodeOf(result);
        return;
      }
      const exit = await streamExec(client, sessionId, input, { stdout: writer(process.stdout), stderr: writer(process.stderr) }, controller.signal);
      if (exit.stdoutTruncated || exit.stderrTruncated) {
        say('paddock: the output passed the service\'s limit for one command, and the command was stopped. Write large output to a file in the session and fetch it with `paddock files download`.');
      }
      if (exit.timedOut) say(`paddock: the command timed out${opts.timeout ? ` after ${opts.timeout} s` : ''}.`);
      else if (exit.signal) say(`paddock: the command was ended by ${exit.signal}.`);
      process.exitCode = exitCodeOf(exit);
    } catch (err) {
      if (controller.signal.aborted) throw new CliError('Interrupted: the command was stopped.', { exitCode: EXIT_INTERRUPTED });
      // The command did not run (or its run broke): 125, so it cannot pass for the command's own exit code.
      throw withExitCode(err, EXIT_EXEC_FAILED);
    } finally {
      process.off('SIGINT', onInterrupt);
    }
  });
}

/**
 * Piped input as the text exec carries (its stdin is UTF-8 text, as its output is): bytes that
 * are not UTF-8 would reach the command changed, so they are refused rather than sent.
 */
function textOf(bytes: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new CliError('Standard input is not UTF-8 text, and exec passes text only: binary data would arrive changed.', {
      hint: 'Put the file in the session with `paddock files create <path> --from <local_file>` (or `paddock files upload` for a folder), then run the command on it.',
      exitCode: EXIT_USAGE,
    });
  }
}

/** Writes output as it comes, waiting when the reader is slower than the command. */
export function writer(stream: NodeJS.WriteStream): (data: string) => Promise<void> {
  return (data) =>
    new Promise((resolve) => {
      if (stream.write(data)) resolve();
      else stream.once('drain', () => resolve());
    });
}
