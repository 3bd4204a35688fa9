import type { Command } from 'commander';
import { withExitCode, EXIT_EXEC_FAILED } from '../errors.ts';
import { apiClient } from '../services/client.ts';
import { pickSession } from '../services/sessions.ts';
import { requireTerminal, runShell } from '../services/shell.ts';
import { sessionOption } from './options.ts';

export function shellCommand(program: Command): void {
  sessionOption(
    program
      .command('shell')
      .summary('open an interactive shell (a terminal) in a session')
      .description(
        'open an interactive shell in a session: a real terminal, resized with this one; every key, Ctrl-C included, goes to the session.\n' +
          'Exits with the remote command\'s exit code. With a command after --, runs it on the terminal instead of the login shell.\n' +
          'Needs a terminal; without one, use `paddock exec`.',
      )
      .usage('[options] [-- <command> [args...]]')
      .argument('[command...]', 'a program and its arguments to run instead of the login shell (put them after --)')
      .passThroughOptions(),
  ).action(async (args: string[], opts: { session?: string }) => {
    const io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
    requireTerminal(io);
    const client = apiClient();
    const sessionId = await pickSession(client, opts.session);
    try {
      process.exitCode = await runShell(client, sessionId, args.length > 0 ? args : undefined, io);
    } catch (err) {
      // No terminal opened (a refusal, no connection): 125, never mistaken for the command's own code.
      throw withExitCode(err, EXIT_EXEC_FAILED);
    }
  });
}
