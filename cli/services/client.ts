import { PaddockClient } from '../api/index.ts';
import { checkBaseUrl } from '../api/index.ts';
import { KEY_SHAPE, resolveConfig, type ResolvedConfig } from '../config/resolve.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { CLI_VERSION } from '../version.ts';

export const USER_AGENT = `paddock-cli/${CLI_VERSION}`;

/** The base address in effect, checked against the https rule; an error naming how to set it. */
export function requireBaseUrl(config: ResolvedConfig = resolveConfig()): string {
  if (!config.baseUrl) {
    throw new CliError('No base URL is set.', {
      hint: 'Run `paddock signup --url <base_url>` (or `paddock login --url <base_url>` for an existing account) or `paddock config set-url <base_url>`, or set PADDOCK_BASE_URL.',
      code: 'not_configured',
    });
  }
  return checkBaseUrl(config.baseUrl);
}

/** A client authenticated with the API key in effect (config file or PADDOCK_API_KEY). */
export function apiClient(config: ResolvedConfig = resolveConfig()): PaddockClient {
  const baseUrl = requireBaseUrl(config);
  if (!config.apiKey) {
    throw new CliError('No API key is set.', {
      hint: 'Run `paddock signup` (a new account) or `paddock login` (an existing one), or save a key with `paddock config set-key`, or set PADDOCK_API_KEY.',
      code: 'not_configured',
    });
  }
  if (!KEY_SHAPE.test(config.apiKey.trim())) {
    // Never quoted: a key with a stray character in it is still most of a secret.
    const where = config.apiKeySource === 'env' ? 'PADDOCK_API_KEY' : config.path;
    throw new CliError(`The API key in ${where} is not a key: keys look like pdk_live_ followed by letters and digits.`, {
      hint: config.apiKeySource === 'env' ? 'Set PADDOCK_API_KEY to the key alone, or unset it to use the saved one.' : 'Save the key again with `paddock config set-key`, or run `paddock login`.',
      code: 'malformed_api_key',
      exitCode: EXIT_USAGE,
    });
  }
  return new PaddockClient({ baseUrl, apiKey: config.apiKey, userAgent: USER_AGENT });
}

/** A client with no credential yet (sign-up, login), for `baseUrl` or the one configured. */
export function anonymousClient(baseUrl?: string): PaddockClient {
  return new PaddockClient({ baseUrl: baseUrl ?? requireBaseUrl(), userAgent: USER_AGENT });
}
