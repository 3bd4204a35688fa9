import type { Command } from 'commander';
import { accountSummary, keyTable } from '../output/account.ts';
import { printResult, say } from '../output/print.ts';
import { listKeys, revokeKey, signup, whoami } from '../services/account.ts';
import { apiClient } from '../services/client.ts';
import type { CredentialFlags } from '../services/credentials.ts';
import { credentialOptions, jsonOption } from './options.ts';

type Json = { json?: boolean };

export function accountCommands(program: Command): void {
  jsonOption(
    credentialOptions(
      program
        .command('signup')
        .description('create an account, log in, create an API key, and save the base URL and the key')
        .option('--url <base_url>', 'the base URL of the service (https://, or http:// for localhost only)')
        .option('--key-name <name>', 'a name for the API key (default: "paddock-cli on <host>")'),
    ),
  ).action(async (opts: CredentialFlags & Json & { url?: string; keyName?: string }) => {
    const done = await signup(opts);
    printResult(opts, done, (d) => `Signed up as ${d.account.email} (${d.account.id}).`);
    say(`API key ${done.apiKey.start}… (${done.apiKey.id}) and the base URL saved in ${done.configPath}.`);
  });

  jsonOption(program.command('whoami').description('the account, its usage this month and its concurrent sandboxes')).action(async (opts: Json) => {
    printResult(opts, await whoami(apiClient()), accountSummary);
  });

  const keys = program
    .command('keys')
    .description('list and revoke API keys (asks for the email and password on every run; keeps no session)');

  jsonOption(credentialOptions(keys.command('ls').description("list the account's API keys"))).action(async (opts: CredentialFlags & Json) => {
    printResult(opts, await listKeys(opts), keyTable);
  });

  jsonOption(credentialOptions(keys.command('rm').description('revoke an API key: it stops working at once').argument('<key_id>', 'the key to revoke'))).action(
    async (keyId: string, opts: CredentialFlags & Json) => {
      await revokeKey(opts, keyId);
      printResult(opts, { id: keyId, revoked: true }, () => undefined);
      say(`Revoked API key ${keyId}.`);
    },
  );
}
