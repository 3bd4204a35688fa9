import { Command } from 'commander';
import { accountCommands } from './commands/account.ts';
import { allowlistCommand } from './commands/allowlist.ts';
import { completionCommand } from './commands/completion.ts';
import { configCommand } from './commands/config.ts';
import { execCommand } from './commands/exec.ts';
import { processCommands } from './commands/processes.ts';
import { previewCommands } from './commands/previews.ts';
import { snapshotCommands } from './commands/snapshots.ts';
import { networkCommands } from './commands/network.ts';
import { filesCommand } from './commands/files.ts';
import { secretsCommand } from './commands/secrets.ts';
import { eventsCommand } from './commands/events.ts';
import { webhooksCommand } from './commands/webhooks.ts';
import { sessionCommand } from './commands/session.ts';
import { shellCommand } from './commands/shell.ts';
import { CLI_VERSION } from './version.ts';

/** The whole command tree. Each group lives in commands/<group>.ts and registers itself here. */
export function buildProgram(): Command {
  const program = new Command('paddock')
    .description(
      'Paddock: short-lived isolated sandboxes (sessions).\n' +
        'Run `paddock` with no arguments in a terminal for the interactive session picker.',
    )
    .version(CLI_VERSION)
    .enablePositionalOptions()
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) });

  accountCommands(program);
  configCommand(program);
  sessionCommand(program);
  execCommand(program);
  processCommands(program);
  previewCommands(program);
  snapshotCommands(program);
  networkCommands(program);
  shellCommand(program);
  filesCommand(program);
  allowlistCommand(program);
  secretsCommand(program);
  eventsCommand(program);
  webhooksCommand(program);
  completionCommand(program);

  // Every subcommand exits through the top-level handler, not commander's process.exit.
  const override = (cmd: Command) => {
    for (const c of cmd.commands) {
      c.exitOverride();
      override(c);
    }
  };
  override(program);
  return program;
}
