import { hostname } from 'node:os';
import type { PaddockClient } from '../api/client.ts';
import type { Account, ApiKeySummary, CreatedApiKey } from '../api/types.ts';
import { checkBaseUrl } from '../api/base-url.ts';
import { updateConfigFile } from '../config/file.ts';
import { resolveConfig } from '../config/resolve.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { say } from '../output/print.ts';
import { anonymousClient, requireBaseUrl } from './client.ts';
import { emailFrom, passwordFrom, type CredentialFlags } from './credentials.ts';

export interface SignupOutcome {
  account: { id: string; email: string };
  apiKey: { id: string; name: string; start: string };
  baseUrl: string;
  configPath: string;
}

/**
 * Sign-up chains three steps, as the spec says: create the account, log in for a session token,
 * create an API key with it. Then the base address and the key go into the config file.
 */
export async function signup(flags: CredentialFlags & { url?: string; keyName?: string }): Promise<SignupOutcome> {
  const config = resolveConfig();
  if (flags.url === undefined && !config.baseUrl) {
    throw new CliError('The base URL of the service is needed.', { hint: 'Pass --url <base_url>.', exitCode: EXIT_USAGE, code: 'input_required' });
  }
  // The https rule comes first: no prompt for a password that would then go out in cleartext.
  const baseUrl = checkBaseUrl(flags.url ?? config.baseUrl!);
  const email = await emailFrom(flags);
  const password = await passwordFrom(flags, { confirm: true });

  const anonymous = anonymousClient(baseUrl);
  const created = await anonymous.signup({ email, password });
  const { token } = await anonymous.login({ email, password });
  const key: CreatedApiKey = await anonymous.withToken(token).createApiKey({ name: flags.keyName ?? defaultKeyName() });

  updateConfigFile(config.path, (file) => {
    file.base_url = baseUrl;
    file.api_key = key.key;
  });
  if (process.env.PADDOCK_API_KEY) say('Note: PADDOCK_API_KEY is set, and overrides the key just saved while it stays set.');
  if (process.env.PADDOCK_BASE_URL && process.env.PADDOCK_BASE_URL !== baseUrl) {
    say('Note: PADDOCK_BASE_URL is set, and overrides the base URL just saved while it stays set.');
  }
  return {
    account: { id: created.account.id, email: created.account.email },
    apiKey: { id: key.id, name: key.name, start: key.start },
    baseUrl,
    configPath: config.path,
  };
}

function defaultKeyName(): string {
  return `paddock-cli on ${hostname()}`.slice(0, 100);
}

/** Keys are managed with email and password, logged in afresh each run; no session is kept. */
async function dashboard(flags: CredentialFlags): Promise<PaddockClient> {
  const baseUrl = requireBaseUrl();
  const email = await emailFrom(flags);
  const password = await passwordFrom(flags);
  const client = anonymousClient(baseUrl);
  const { token } = await client.login({ email, password });
  return client.withToken(token);
}

export interface KeyRow extends ApiKeySummary {
  /** This key is the one the CLI is configured with. */
  current: boolean;
}

export async function listKeys(flags: CredentialFlags): Promise<KeyRow[]> {
  const client = await dashboard(flags);
  const configured = resolveConfig().apiKey;
  return (await client.listApiKeys()).map((k) => ({ ...k, current: Boolean(configured && k.start && configured.startsWith(k.start)) }));
}

export async function revokeKey(flags: CredentialFlags, keyId: string): Promise<void> {
  const client = await dashboard(flags);
  await client.revokeApiKey(keyId);
}

export function whoami(client: PaddockClient): Promise<Account> {
  return client.account();
}
