import type { Command } from 'commander';
import { fieldFlags } from '../output/fields.ts';
import { table } from '../output/format.ts';
import { printResult, say } from '../output/print.ts';
import { apiClient } from '../services/client.ts';
import { injectionFromFlags, secretDelivery, secretValue, type InjectFlags } from '../services/secrets.ts';
import { jsonOption, repeated } from './options.ts';

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
    .description("secrets, given to every exec as environment variables, or brokered: set as a header on the session's HTTPS requests to the hosts named; values are never shown");

  const create = scoped(
    secrets
      .command('create')
      .description('create or replace a secret; the value comes from standard input or a hidden prompt, never an argument')
      .argument('<name>', 'an environment variable name, e.g. OPENAI_API_KEY')
      .option('--inject-host <host>', "broker it instead: the session's egress sets it as a header on HTTPS requests to this domain (api.example.com, *.example.com); repeatable", repeated)
      .option('--inject-header <name>', 'the header it is set as (default Authorization)')
      .option('--inject-format <format>', "the header's value, {value} standing for the secret's (default 'Bearer {value}')"),
  );
  fieldFlags(create, { 'body.inject': '--inject-host', 'body.inject.hosts': '--inject-host', 'body.inject.header': '--inject-header', 'body.inject.format': '--inject-format' }).action(
    async (name: string, opts: Flags & InjectFlags) => {
      const inject = injectionFromFlags(opts);
      const value = await secretValue(name);
      const s = await apiClient().createSecret({ name, value, sandboxId: opts.session, ...(inject && { inject }) });
      printResult(opts, s, (x) => x.name);
      const brokered = s.inject ? `, brokered to ${s.inject.hosts.join(', ')} as ${s.inject.header}` : '';
      say(`Secret ${s.name} saved${s.sandboxId ? ` for session ${s.sandboxId}` : ' for the account'}${brokered}.`);
    },
  );

  scoped(secrets.command('ls').description("list secrets' names, scopes and where they go (env, or the hosts they are brokered to)")).action(async (opts: Flags) => {
    const list = await apiClient().listSecrets(opts.session);
    printResult(opts, list, (l) => (l.length ? table(['NAME', 'SCOPE', 'DELIVERY', 'CREATED'], l.map((s) => [s.name, s.sandboxId ?? 'account', secretDelivery(s), s.createdAt])) : undefined));
    if (!opts.json && list.length === 0) say('No secrets.');
  });

  scoped(secrets.command('rm').description('remove a secret').argument('<name>', 'the secret')).action(async (name: string, opts: Flags) => {
    await apiClient().deleteSecret(name, opts.session);
    printResult(opts, { name, sandboxId: opts.session ?? null, deleted: true }, () => undefined);
    say(`Secret ${name} removed.`);
  });
}
