import type { Command } from 'commander';
import { accountSummary, keyTable } from '../output/account.ts';
import { fieldFlags } from '../output/fields.ts';
import { printResult, say } from '../output/print.ts';
import { createKey, listKeys, login, revokeKey, signup, whoami } from '../services/account.ts';
import { apiClient } from '../services/client.ts';
import type { CredentialFlags } from '../services/credentials.ts';
import { credentialOptions, jsonOption } from './options.ts';

type Json = { json?: boolean };
type SaveFlags = CredentialFlags & Json & { url?: string; keyName?: string };

const urlOption = (cmd: Command) =>
  cmd
    .option('--url <base_url>', 'the base URL of the service (https://, or http:// for localhost only)')
    .option('--key-name <name>', 'a name for the API key (default: "paddock-cli on <host>")');

export function accountCommands(program: Command): void {
  jsonOption(
    fieldFlags(
      credentialOptions(urlOption(program.command('signup').description('create an account, log in, create an API key, and save the base URL and the key')), {
        newPassword: true,
      }),
      { name: '--key-name' },
    ),
  ).action(async (opts: SaveFlags) => {
    const done = await signup(opts);
    printResult(opts, done, (d) => `Signed up as ${d.account.email} (${d.account.id}).`);
    say(`API key ${done.apiKey.start}… (${done.apiKey.id}) and the base URL saved in ${done.configPath}.`);
  });

  jsonOption(
    fieldFlags(
      credentialOptions(
        urlOption(
          program
            .command('login')
            .description('log in with email and password, create a new API key, and save it and the base URL (the way back in after losing the key)'),
        ),
      ),
      { name: '--key-name' },
    ),
  ).action(async (opts: SaveFlags) => {
    const done = await login(opts);
    printResult(opts, done, (d) => `Logged in as ${d.account.email} (${d.account.id}).`);
    say(`New API key ${done.apiKey.start}… (${done.apiKey.id}) and the base URL saved in ${done.configPath}.`);
  });

  jsonOption(program.command('whoami').description('the account, its usage this month and its concurrent sandboxes')).action(async (opts: Json) => {
    printResult(opts, await whoami(apiClient()), accountSummary);
  });

  const keys = program
    .command('keys')
    .description('create, list and revoke API keys (asks for the email and password on every run; keeps no session)');

  jsonOption(
    fieldFlags(
      credentialOptions(
        keys
          .command('create')
          .description('create an API key and print it on stdout, once: it cannot be shown again (it is not saved; `paddock config set-key` saves one)')
          .option('--name <name>', 'a name for the key (default: "paddock-cli on <host>")'),
      ),
      { name: '--name' },
    ),
  ).action(async (opts: CredentialFlags & Json & { name?: string }) => {
    const key = await createKey(opts);
    printResult(opts, key, (k) => k.key);
    say(`Created API key ${key.id} (${key.name}). This is the only time it is shown: keep it safe.`);
  });

  jsonOption(credentialOptions(keys.command('ls').description("list the account's API keys"))).action(async (opts: CredentialFlags & Json) => {
    printResult(opts, await listKeys(opts), keyTable);
  });

  jsonOption(
    fieldFlags(
      credentialOptions(
        keys
          .command('rm')
          .description('revoke an API key: it stops working at once (the key this CLI uses only when confirmed, or with --yes)')
          .argument('<key_id>', 'the key to revoke')
          .option('-y, --yes', 'revoke it without asking, even when it is the key this CLI uses'),
      ),
      { keyId: '<key_id>' },
    ),
  ).action(async (keyId: string, opts: CredentialFlags & Json & { yes?: boolean }) => {
    const { current } = await revokeKey(opts, keyId);
    printResult(opts, { id: keyId, revoked: true, current }, () => undefined);
    say(`Revoked API key ${keyId}.${current ? ' It was the key this CLI uses: `paddock login` makes a new one.' : ''}`);
  });
}
