import type { Command } from 'commander';
import { fieldFlags } from '../output/fields.ts';
import type { ExecInput } from '../api/types.ts';
import { CliError, EXIT_EXEC_FAILED, EXIT_INTERRUPTED, withExitCode } from '../errors.ts';
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
            'Piped standard input is passed on to the command.\n' +
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
    if (opts.stdin && stdinIsPiped()) input.stdin = (await readStdin()).toString('utf8');

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
      if (exit.stdoutTruncated || exit.stderrTruncated) say('paddock: the output was longer than the service keeps, and was cut.');
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

/** Writes output as it comes, waiting when the reader is slower than the command. */
export function writer(stream: NodeJS.WriteStream): (data: string) => Promise<void> {
  return (data) =>
    new Promise((resolve) => {
      if (stream.write(data)) resolve();
      else stream.once('drain', () => resolve());
    });
}
