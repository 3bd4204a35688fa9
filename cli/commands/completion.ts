import { Argument, type Command } from 'commander';
import { completionScript, SHELLS, type Shell } from '../output/completion.ts';

export function completionCommand(program: Command): void {
  program
    .command('completion')
    .description('print a shell completion script for paddock\'s commands and flags, e.g. eval "$(paddock completion bash)"')
    .addArgument(new Argument('<shell>', 'the shell').choices(SHELLS))
    .action((shell: Shell, _opts: unknown, cmd: Command) => {
      let root = cmd;
      while (root.parent) root = root.parent;
      process.stdout.write(completionScript(root, shell));
    });
}
