import type { Pool } from 'pg';
import { ApiError } from '../errors.ts';
import type { Config } from '../config.ts';
import { SecretCipher, secretContext } from './cipher.ts';
import * as policy from '../repositories/policy.ts';
import type { SecretsRead, StoredSecret } from '../repositories/policy.ts';
import { injectedValue } from '../network/brokered.ts';
import type { Logger } from '../logger.ts';
import { NO_SECRETS, OpenedSecrets, type OpenedBrokered, type OpenedSecretsCache } from './opened.ts';

// Opening the secrets that reach a sandbox: read with the version this process holds opened,
// decrypted only when they changed, for an exec's environment and its sandbox's egress (brokered
// ones); the API's commands and the workers' egress sweep both open them here.

/** What opening a sandbox's secrets takes. */
export interface SecretOpening {
  secretCipher?: SecretCipher;
  openedSecrets: OpenedSecretsCache;
  log: Pick<Logger, 'error'>;
}

/** The cipher of the secrets' key, where one is configured. */
export function secretsCipher(config: Pick<Config, 'PADDOCK_SECRETS_KEY' | 'PADDOCK_SECRETS_KEY_PREVIOUS'>): SecretCipher | undefined {
  return config.PADDOCK_SECRETS_KEY ? new SecretCipher(config.PADDOCK_SECRETS_KEY, config.PADDOCK_SECRETS_KEY_PREVIOUS) : undefined;
}

export function cipherOf(deps: Pick<SecretOpening, 'secretCipher'>): SecretCipher {
  if (!deps.secretCipher) {
    throw new ApiError('service_unavailable', 'Secrets are not configured on this server (PADDOCK_SECRETS_KEY).');
  }
  return deps.secretCipher;
}

/**
 * The secrets, decrypted, in the order they are stored in (the account's, then the sandbox's
 * own): the ordinary ones as the environment an exec gets, the sandbox's winning on a name clash;
 * the brokered ones as what the sandbox's egress sets, never in the environment.
 */
function openStored(deps: SecretOpening, accountId: string, stored: StoredSecret[]): { env: Record<string, string>; brokered: OpenedBrokered[] } {
  const env: Record<string, string> = {};
  const brokered: OpenedBrokered[] = [];
  if (stored.length === 0) return { env, brokered };
  const cipher = cipherOf(deps);
  for (const secret of stored) {
    let value: string;
    try {
      value = cipher.decrypt(secret.ciphertext, secretContext(accountId, secret.sandboxId, secret.name));
    } catch {
      // A key lost or not yet rolled out to this replica (docs/deploy.md, rotation): the operator's
      // to fix, so the log names the row and the caller is told to retry, never shown a value.
      deps.log.error({ accountId, sandboxId: secret.sandboxId, secret: secret.name }, 'stored secret decrypts with no configured key (PADDOCK_SECRETS_KEY, PADDOCK_SECRETS_KEY_PREVIOUS)');
      throw new ApiError('service_unavailable', `Secret ${secret.name} cannot be read with this server's keys; the operator has been alerted.`);
    }
    const { inject } = secret;
    if (inject) brokered.push({ credential: { hosts: inject.hosts, header: inject.header, value: injectedValue(inject.format, value) }, value });
    else env[secret.name] = value;
  }
  return { env, brokered };
}

/**
 * The secrets that reach the sandbox, opened: what `read` brought (read with `held`'s version,
 * the one this process holds), decrypted; or, when they have not changed since, `held` itself.
 * Read at every exec, so a change applies to the next one, on every replica.
 */
export function openSecrets(deps: SecretOpening, accountId: string, sandboxId: string, read: SecretsRead, held: OpenedSecrets | undefined): OpenedSecrets {
  if (read.stored === undefined) {
    if (held && held.version === read.version) return held;
    throw new Error('the secrets were read as unchanged from a version this process does not hold');
  }
  if (read.version === null && read.stored.length === 0) return NO_SECRETS;
  // Execs sent at once all read before the first opened them: the first one's serves the rest.
  const meanwhile = read.version === null ? undefined : deps.openedSecrets.get(accountId, sandboxId);
  if (meanwhile?.version === read.version) return meanwhile;
  const { env, brokered } = openStored(deps, accountId, read.stored);
  const opened = new OpenedSecrets(read.version, env, brokered);
  deps.openedSecrets.put(accountId, sandboxId, opened);
  return opened;
}

/** The secrets that reach the sandbox, opened (from this process's cache while unchanged). */
export async function openedSecretsFor(deps: SecretOpening & { pg: Pool }, accountId: string, sandboxId: string): Promise<OpenedSecrets> {
  const held = deps.openedSecrets.get(accountId, sandboxId);
  const read = await policy.secretsForSandbox(deps.pg, accountId, sandboxId, held?.version ?? undefined);
  return openSecrets(deps, accountId, sandboxId, read, held);
}
