import type { Command } from 'commander';
import { checkBaseUrl } from '../api/index.ts';
import { updateConfigFile } from '../config/file.ts';
import { maskKey, resolveConfig } from '../config/resolve.ts';
import { printResult, say } from '../output/print.ts';
import { apiKeyFrom, saveApiKey } from '../services/config.ts';
import { jsonOption } from './options.ts';

export function configCommand(program: Command): void {
  const config = program.command('config').description('the local configuration: base URL and API key');

  config
    .command('set-url')
    .description('save the base URL of the service (https://, or http:// for localhost only)')
    .argument('<base_url>', 'e.g. https://paddock.example.com')
    .action((baseUrl: string) => {
      const url = checkBaseUrl(baseUrl);
      const { path } = resolveConfig();
      updateConfigFile(path, (file) => {
        file.base_url = url;
      });
      say(`Base URL set to ${url} (in ${path}).`);
      if (process.env.PADDOCK_BASE_URL) say('Note: PADDOCK_BASE_URL is set, and overrides it while it stays set.');
    });

  config
    .command('set-key')
    .description('save an API key (pdk_live_…) once the service has accepted it; without the argument it is read from standard input or asked for')
    .argument('[api_key]', 'the key; leave it out to keep it out of shell history')
    .option('--no-verify', 'save it without checking it against the service (offline)')
    .action(async (given: string | undefined, opts: { verify: boolean }) => {
      const key = await apiKeyFrom(given);
      const saved = await saveApiKey(key, { verify: opts.verify });
      say(`API key ${maskKey(key)} saved (in ${saved.path})${saved.account ? `: it belongs to ${saved.account.email} (${saved.account.id})` : ''}.`);
      if (!opts.verify) say('It was not checked against the service (--no-verify).');
      if (process.env.PADDOCK_API_KEY) say('Note: PADDOCK_API_KEY is set, and overrides it while it stays set.');
    });

  jsonOption(config.command('show').description('show the configuration in effect (the key masked) and where each value comes from')).action(
    (opts: { json?: boolean }) => {
      const c = resolveConfig();
      const shown = {
        path: c.path,
        baseUrl: c.baseUrl ?? null,
        baseUrlSource: c.baseUrlSource,
        apiKey: c.apiKey ? maskKey(c.apiKey) : null,
        apiKeySource: c.apiKeySource,
      };
      printResult(opts, shown, (s) => {
        const from = (source: string) => (source === 'env' ? ' (from the environment)' : '');
        return [
          `Config file: ${s.path}`,
          `Base URL:    ${s.baseUrl ?? '(not set)'}${from(s.baseUrlSource)}`,
          `API key:     ${s.apiKey ?? '(not set)'}${from(s.apiKeySource)}`,
        ].join('\n');
      });
      if (c.baseUrl) {
        try {
          checkBaseUrl(c.baseUrl);
        } catch (err) {
          say(`Warning: ${(err as Error).message}`);
        }
      }
    },
  );
}
