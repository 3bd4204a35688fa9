import { PaddockClient } from '../api/index.ts';
import { PaddockApiError, PaddockConnectionError } from '../api/index.ts';
import { updateConfigFile } from '../config/file.ts';
import { KEY_SHAPE, resolveConfig } from '../config/resolve.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { askNonEmpty } from '../terminal/prompt.ts';
import { readStdinValue, stdinIsPiped } from '../terminal/stdin.ts';
import { requireBaseUrl, USER_AGENT } from './client.ts';


export interface SavedKey {
  path: string;
  /** The account the key belongs to, when it was checked. */
  account: { id: string; email: string } | undefined;
}

/** The key to save: the argument, else standard input when piped, else a hidden prompt. */
export async function apiKeyFrom(given: string | undefined): Promise<string> {
  const key = (
    given ??
    (stdinIsPiped()
      ? await readStdinValue()
      : await askNonEmpty('API key: ', { what: 'The API key', instead: 'the key as an argument, or on standard input', hidden: true }))
  ).trim();
  if (!KEY_SHAPE.test(key)) {
    throw new CliError('That is not an API key: keys look like pdk_live_ followed by letters and digits.', { exitCode: EXIT_USAGE });
  }
  return key;
}

/**
 * Saves an API key in the config file; unless `verify` is false, only once the service has
 * accepted it (GET /v1/account), so a mistyped or revoked key is never saved over a good one.
 */
export async function saveApiKey(key: string, options: { verify: boolean }): Promise<SavedKey> {
  const config = resolveConfig();
  let account: SavedKey['account'];
  if (options.verify) {
    if (!config.baseUrl) {
      throw new CliError('No base URL is set, so the key cannot be checked.', {
        hint: 'Set it first with `paddock config set-url <base_url>`, or pass --no-verify to save the key unchecked.',
        exitCode: EXIT_USAGE,
        code: 'not_configured',
      });
    }
    account = await checkKey(requireBaseUrl(config), key);
  }
  updateConfigFile(config.path, (file) => {
    file.api_key = key;
  });
  return { path: config.path, account };
}

async function checkKey(baseUrl: string, key: string): Promise<SavedKey['account']> {
  try {
    const me = await new PaddockClient({ baseUrl, apiKey: key, userAgent: USER_AGENT }).account();
    return { id: me.id, email: me.email };
  } catch (err) {
    // A key without the scope to read the account is still a key the service knows.
    if (err instanceof PaddockApiError && err.code === 'insufficient_scope') return undefined;
    if (err instanceof PaddockApiError && (err.code === 'invalid_credential' || err.code === 'wrong_credential_type')) {
      throw new CliError(`${baseUrl} does not accept this API key (it is unknown, revoked or mistyped); it was not saved.`, {
        hint: 'List the account\'s keys with `paddock keys ls`, or make a new one with `paddock login`.',
        code: err.code,
      });
    }
    if (err instanceof PaddockConnectionError) {
      throw new CliError(`${err.message} The key was not saved.`, {
        hint: 'Check the base URL (`paddock config show`), or pass --no-verify to save the key without checking it (offline).',
        code: 'connection_failed',
      });
    }
    throw err;
  }
}
