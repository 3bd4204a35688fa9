import { hostname } from 'node:os';
import type { PaddockClient } from '../api/index.ts';
import type { Account, ApiKeySummary, CreatedApiKey } from '../api/types.ts';
import { checkBaseUrl } from '../api/index.ts';
import { readConfigFile, updateConfigFile } from '../config/file.ts';
import { resolveConfig } from '../config/resolve.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { say } from '../output/print.ts';
import { anonymousClient, requireBaseUrl } from './client.ts';
import { confirm, canPrompt } from '../terminal/prompt.ts';
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

  saveCredentials(config.path, baseUrl, key.key);
  return {
    account: { id: created.account.id, email: created.account.email },
    apiKey: { id: key.id, name: key.name, start: key.start },
    baseUrl,
    configPath: config.path,
  };
}

export interface LoginOutcome {
  account: { id: string; email: string };
  apiKey: { id: string; name: string; start: string };
  baseUrl: string;
  configPath: string;
}

/**
 * The way back in when the key is lost (or on a new machine): log in with email and password,
 * mint a new API key with the session token, check it, and save it with the base address.
 */
export async function login(flags: CredentialFlags & { url?: string; keyName?: string }): Promise<LoginOutcome> {
  const config = resolveConfig();
  if (flags.url === undefined && !config.baseUrl) {
    throw new CliError('The base URL of the service is needed.', { hint: 'Pass --url <base_url>.', exitCode: EXIT_USAGE, code: 'input_required' });
  }
  const baseUrl = checkBaseUrl(flags.url ?? config.baseUrl!);
  const email = await emailFrom(flags);
  const password = await passwordFrom(flags);
  const anonymous = anonymousClient(baseUrl);
  const { token } = await anonymous.login({ email, password });
  const dashboardClient = anonymous.withToken(token);
  const key = await dashboardClient.createApiKey({ name: flags.keyName ?? defaultKeyName() });
  const replaced = readConfigFile(config.path);
  saveCredentials(config.path, baseUrl, key.key);
  if (replaced.api_key && replaced.base_url === baseUrl) await notePreviousKey(dashboardClient, replaced.api_key, key.id);
  const account = await anonymous.withApiKey(key.key).account();
  return {
    account: { id: account.id, email: account.email },
    apiKey: { id: key.id, name: key.name, start: key.start },
    baseUrl,
    configPath: config.path,
  };
}

/**
 * The key the config held before a login is not revoked (it may be in use elsewhere, copied into a
 * CI secret): the person is told it still works, and how to revoke it. Best effort: a key of
 * another account, or one already revoked, is not this account's to mention.
 */
async function notePreviousKey(client: PaddockClient, previous: string, newId: string): Promise<void> {
  const keys = await client.listApiKeys().catch(() => []);
  const old = keys.find((k) => k.id !== newId && previous.startsWith(k.start));
  if (old) say(`Your previous key ${old.name} (${old.start}…, ${old.id}) still works; if nothing else uses it, revoke it with \`paddock keys rm ${old.id}\`.`);
}

/** The base address and a new key into the config file, with a word on environment overrides. */
function saveCredentials(path: string, baseUrl: string, apiKey: string): void {
  updateConfigFile(path, (file) => {
    file.base_url = baseUrl;
    file.api_key = apiKey;
  });
  if (process.env.PADDOCK_API_KEY) say('Note: PADDOCK_API_KEY is set, and overrides the key just saved while it stays set.');
  if (process.env.PADDOCK_BASE_URL && process.env.PADDOCK_BASE_URL !== baseUrl) {
    say('Note: PADDOCK_BASE_URL is set, and overrides the base URL just saved while it stays set.');
  }
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
  return (await client.listApiKeys()).map((k) => ({ ...k, current: isCurrent(k, configured) }));
}

/** A new API key for the account, not saved: the caller shows it once. */
export async function createKey(flags: CredentialFlags & { name?: string }): Promise<CreatedApiKey> {
  const client = await dashboard(flags);
  return client.createApiKey({ name: flags.name ?? defaultKeyName() });
}

function isCurrent(key: Pick<ApiKeySummary, 'start'>, configured: string | undefined): boolean {
  return Boolean(configured && key.start && configured.startsWith(key.start));
}

/**
 * Revokes a key. The key this CLI itself uses is revoked only when confirmed: at the terminal,
 * or with `yes` (--yes); without a terminal and without it, the answer is a refusal naming --yes.
 */
export async function revokeKey(flags: CredentialFlags & { yes?: boolean }, keyId: string): Promise<{ current: boolean }> {
  const client = await dashboard(flags);
  const configured = resolveConfig().apiKey;
  const key = (await client.listApiKeys()).find((k) => k.id === keyId);
  const current = key !== undefined && isCurrent(key, configured);
  if (current && !flags.yes) {
    const what = `${keyId} (${key.name}) is the API key this CLI uses`;
    if (!canPrompt()) {
      throw new CliError(`${what}; revoking it is confirmed with --yes.`, {
        hint: 'Pass --yes to revoke it anyway (then `paddock login` makes a new one).',
        exitCode: EXIT_USAGE,
        code: 'confirmation_required',
      });
    }
    say(`${what}: once it is revoked, commands fail until \`paddock login\` (or \`paddock config set-key\`) gives it a new one.`);
    if (!(await confirm(`Revoke ${keyId}?`, { what: 'A confirmation', instead: '--yes' }))) {
      throw new CliError(`Not revoked: ${keyId} still works.`, { code: 'cancelled' });
    }
  }
  await client.revokeApiKey(keyId);
  return { current };
}

export function whoami(client: PaddockClient): Promise<Account> {
  return client.account();
}
