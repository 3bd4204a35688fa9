import type { Command } from 'commander';
import { checkBaseUrl } from '../api/base-url.ts';
import { updateConfigFile } from '../config/file.ts';
import { maskKey, resolveConfig } from '../config/resolve.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { printResult, say } from '../output/print.ts';
import { askNonEmpty } from '../terminal/prompt.ts';
import { readStdinValue, stdinIsPiped } from '../terminal/stdin.ts';
import { jsonOption } from './options.ts';

const KEY_SHAPE = /^[a-z]+_live_[A-Za-z0-9]+$/;

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
    .description('save an API key (pdk_live_…); without the argument it is read from standard input or asked for')
    .argument('[api_key]', 'the key; leave it out to keep it out of shell history')
    .action(async (given: string | undefined) => {
      const key = (
        given ??
        (stdinIsPiped()
          ? await readStdinValue()
          : await askNonEmpty('API key: ', { what: 'The API key', instead: 'the key as an argument, or on standard input', hidden: true }))
      ).trim();
      if (!KEY_SHAPE.test(key)) {
        throw new CliError('That is not an API key: keys look like pdk_live_ followed by letters and digits.', { exitCode: EXIT_USAGE });
      }
      const { path } = resolveConfig();
      updateConfigFile(path, (file) => {
        file.api_key = key;
      });
      say(`API key ${maskKey(key)} saved (in ${path}).`);
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
