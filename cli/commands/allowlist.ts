import type { Command } from 'commander';
import { fieldFlags } from '../output/fields.ts';
import type { Allowlist } from '../api/types.ts';
import { printResult, say } from '../output/print.ts';
import { apiClient } from '../services/client.ts';
import { jsonOption } from './options.ts';

type Json = { json?: boolean };

function show(opts: Json, a: Allowlist): void {
  printResult(opts, a, (x) => x.commands.join('\n'));
  if (!opts.json && a.commands.length === 0) say('The allowlist is empty: every command is allowed.');
}

export function allowlistCommand(program: Command): void {
  const allowlist = program.command('allowlist').description('the programs exec may run (empty: every program)');

  jsonOption(allowlist.command('get').description('print the allowlist, one program a line')).action(async (opts: Json) => {
    show(opts, await apiClient().getAllowlist());
  });

  fieldFlags(
    jsonOption(
      allowlist
        .command('set')
        .description('replace the allowlist')
        .argument('<program...>', 'program names, e.g. python3 ls cat'),
    ),
    { 'body.commands': '<program...>' },
  ).action(async (commands: string[], opts: Json) => {
    show(opts, await apiClient().setAllowlist(commands));
  });

  jsonOption(allowlist.command('clear').description('empty the allowlist: every command is allowed again')).action(async (opts: Json) => {
    const client = apiClient();
    await client.clearAllowlist();
    show(opts, await client.getAllowlist());
  });
}
