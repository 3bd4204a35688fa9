import type { Command } from 'commander';
import { fieldFlags } from '../output/fields.ts';
import { table } from '../output/format.ts';
import { printResult, say } from '../output/print.ts';
import { apiClient } from '../services/client.ts';
import { secretValue } from '../services/secrets.ts';
import { jsonOption } from './options.ts';

type Flags = { json?: boolean; session?: string };

const scoped = (cmd: Command) =>
  fieldFlags(jsonOption(cmd.option('-s, --session <session_id>', 'a secret of this session only (default: account-wide)')), {
    sandboxId: '--session',
    'body.name': '<name>',
    'body.value': 'the value',
  });

export function secretsCommand(program: Command): void {
  const secrets = program
    .command('secrets')
    .description('secrets, given to every exec as environment variables; values are never shown');

  scoped(
    secrets
      .command('create')
      .description('create or replace a secret; the value comes from standard input or a hidden prompt, never an argument')
      .argument('<name>', 'an environment variable name, e.g. OPENAI_API_KEY'),
  ).action(async (name: string, opts: Flags) => {
    const value = await secretValue(name);
    const s = await apiClient().createSecret({ name, value, sandboxId: opts.session });
    printResult(opts, s, (x) => x.name);
    say(`Secret ${s.name} saved${s.sandboxId ? ` for session ${s.sandboxId}` : ' for the account'}.`);
  });

  scoped(secrets.command('ls').description("list secrets' names and scopes")).action(async (opts: Flags) => {
    const list = await apiClient().listSecrets(opts.session);
    printResult(opts, list, (l) => (l.length ? table(['NAME', 'SCOPE', 'CREATED'], l.map((s) => [s.name, s.sandboxId ?? 'account', s.createdAt])) : undefined));
    if (!opts.json && list.length === 0) say('No secrets.');
  });

  scoped(secrets.command('rm').description('remove a secret').argument('<name>', 'the secret')).action(async (name: string, opts: Flags) => {
    await apiClient().deleteSecret(name, opts.session);
    printResult(opts, { name, sandboxId: opts.session ?? null, deleted: true }, () => undefined);
    say(`Secret ${name} removed.`);
  });
}
