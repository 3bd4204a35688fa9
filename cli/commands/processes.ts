import { InvalidArgumentError, type Command } from 'commander';
import type { ProcessSignal } from '../api/types.ts';
import { CliError, EXIT_INTERRUPTED } from '../errors.ts';
import { processTable } from '../output/processes.ts';
import { printResult, say } from '../output/print.ts';
import { apiClient } from '../services/client.ts';
import { listProcesses, processLogs, stopProcess } from '../services/processes.ts';
import { pickSession } from '../services/sessions.ts';
import { writer } from './exec.ts';
import { jsonOption, sessionOption } from './options.ts';

interface Flags {
  session?: string;
  json?: boolean;
}

function signalName(value: string): ProcessSignal {
  const name = value.toUpperCase().replace(/^SIG/, '');
  if (name !== 'TERM' && name !== 'KILL') throw new InvalidArgumentError('must be TERM or KILL.');
  return name;
}

/** `ps`, `logs` and `kill`: the background processes started with `exec --background`. */
export function processCommands(program: Command): void {
  jsonOption(sessionOption(program.command('ps').description('list the background processes of a session (started with exec --background)'))).action(
    async (opts: Flags) => {
      const client = apiClient();
      const list = await listProcesses(client, await pickSession(client, opts.session));
      printResult(opts, list, (l) => (l.length ? processTable(l) : undefined));
      if (!opts.json && list.length === 0) say('No background processes.');
    },
  );

  sessionOption(
    program
      .command('logs')
      .description("print a background process's kept output (stdout to stdout, stderr to stderr); -f follows it until the process ends")
      .argument('<proc>', 'the process id (proc_…)')
      .option('-f, --follow', 'keep printing output as it comes, until the process ends'),
  ).action(async (procId: string, opts: Flags & { follow?: boolean }) => {
    const client = apiClient();
    const sessionId = await pickSession(client, opts.session);
    const controller = new AbortController();
    const onInterrupt = () => controller.abort();
    process.once('SIGINT', onInterrupt);
    try {
      const sinks = { stdout: writer(process.stdout), stderr: writer(process.stderr) };
      const exit = await processLogs(client, sessionId, procId, sinks, { follow: opts.follow ?? false, signal: controller.signal });
      if (exit) say(`paddock: the process has ended (${exit.signal ?? `exit code ${exit.exitCode ?? 'unknown'}`}).`);
      else if (opts.follow) say('paddock: the output stream ended before the process did; run the command again to go on.');
    } catch (err) {
      // Ctrl-C stops following, never the process.
      if (controller.signal.aborted) throw new CliError('Interrupted: stopped following; the process runs on.', { exitCode: EXIT_INTERRUPTED });
      throw err;
    } finally {
      process.off('SIGINT', onInterrupt);
    }
  });

  jsonOption(
    sessionOption(
      program
        .command('kill')
        .description("signal a background process's process group (TERM by default)")
        .argument('<proc>', 'the process id (proc_…)')
        .option('--signal <TERM|KILL>', 'the signal to send', signalName, 'TERM' as ProcessSignal),
    ),
  ).action(async (procId: string, opts: Flags & { signal: ProcessSignal }) => {
    const client = apiClient();
    await stopProcess(client, await pickSession(client, opts.session), procId, opts.signal);
    printResult(opts, { id: procId, signal: opts.signal }, () => undefined);
    say(`Sent SIG${opts.signal} to ${procId}.`);
  });
}
