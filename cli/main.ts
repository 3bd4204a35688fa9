import { CommanderError, type Command } from 'commander';
import { EXIT_BROKEN_PIPE, EXIT_USAGE } from './errors.ts';
import { printError } from './output/error.ts';
import { fieldContext } from './output/fields.ts';
import { buildProgram } from './program.ts';
import { registerMcpCommands } from './mcp/command.ts';

/** Runs the CLI on the given arguments (without node and the script); answers the exit code. */
export async function main(args: string[]): Promise<number> {
  endOnClosedPipe();
  const program = buildProgram();
  registerMcpCommands(program);
  // The command that runs, so that an error can speak of its flags rather than the API's fields.
  let running: Command | undefined;
  program.hook('preAction', (_program, action) => {
    running = action;
  });
  if (args.length === 0) {
    if (process.stdin.isTTY && process.stdout.isTTY) {
      const { openPicker } = await import('./ui/open-picker.ts');
      try {
        return await openPicker();
      } catch (err) {
        return printError(err, false);
      }
    }
    process.stdout.write(program.helpInformation());
    return 0;
  }
  try {
    await program.parseAsync(args, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has printed the message (or the help, or the version) already.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      return err.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    // --json before any `--`: what follows belongs to exec's command.
    const own = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
    return printError(err, own.includes('--json'), process.stderr, fieldContext(running));
  }
}

let pipesWatched = false;

/**
 * A reader that stops early (`paddock exec -- seq 1 100000 | head -1`) closes the pipe, and the
 * next write fails with EPIPE: the CLI ends at once and quietly, as a tool that SIGPIPE ends
 * would (Node ignores the signal itself). A command still running in a sandbox sees its stream's
 * client gone, and is ended there.
 */
function endOnClosedPipe(): void {
  if (pipesWatched) return;
  pipesWatched = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(EXIT_BROKEN_PIPE);
      throw err;
    });
  }
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2));
}
