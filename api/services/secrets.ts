import type { Pool } from 'pg';
import type { Config } from '../../shared/config.ts';
import { ApiError } from '../../shared/errors.ts';
import type { SecretCipher } from '../../shared/secrets/cipher.ts';
import { secretContext } from '../../shared/secrets/cipher.ts';
import * as policy from '../../shared/repositories/policy.ts';
import type { SecretsRead, SecretSummary, SecretUsage, StoredSecret } from '../../shared/repositories/policy.ts';
import { NO_SECRETS, OpenedSecrets, type OpenedBrokered } from './opened-secrets.ts';
import { injectedValue, type Injection } from '../../shared/network/brokered.ts';
import type { SandboxEngine } from '../../shared/sandboxes/engine.ts';
import type { Logger } from '../../shared/logger.ts';
import type { OpenedSecretsCache } from './opened-secrets.ts';

export type SecretRow = SecretSummary;

/** What opening a sandbox's secrets takes. */
export interface SecretOpening {
  secretCipher?: SecretCipher;
  openedSecrets: OpenedSecretsCache;
  log: Pick<Logger, 'error'>;
}

/** The operator's caps on an account's and a sandbox's secrets. */
export type SecretLimits = Pick<
  Config,
  'PADDOCK_SECRETS_MAX_PER_ACCOUNT' | 'PADDOCK_SECRETS_MAX_PER_SANDBOX' | 'PADDOCK_SECRETS_MAX_BYTES_PER_ACCOUNT' | 'PADDOCK_SECRETS_MAX_BYTES_PER_SANDBOX'
>;

/** What storing a secret needs: the database, the cipher (absent when not configured), the caps. */
export interface SecretWriter {
  pg: Pool;
  secretCipher?: SecretCipher;
  limits: SecretLimits;
}

export function cipherOf(deps: Pick<SecretOpening, 'secretCipher'>): SecretCipher {
  if (!deps.secretCipher) {
    throw new ApiError('service_unavailable', 'Secrets are not configured on this server (PADDOCK_SECRETS_KEY).');
  }
  return deps.secretCipher;
}

/** A sandbox scope must be one of the caller's sandboxes, and still active to take new secrets. */
export async function checkScope(sandboxes: Pick<SandboxEngine, 'findOwn'>, accountId: string, sandboxId: string | undefined, forWrite: boolean): Promise<void> {
  if (sandboxId === undefined) return;
  const sandbox = await sandboxes.findOwn(accountId, sandboxId);
  if (forWrite && sandbox.state !== 'active') throw new ApiError('sandbox_not_running', `Sandbox ${sandboxId} is destroyed.`);
}

/**
 * Creates or replaces a secret; answers whether it replaced one, and the injection of the one it
 * replaced (null for none or an ordinary one).
 */
export async function putSecret(
  writer: SecretWriter,
  accountId: string,
  input: { name: string; value: string; sandboxId?: string; inject?: Injection },
): Promise<{ row: SecretRow; replaced: boolean; replacedInject: Injection | null }> {
  const sandboxId = input.sandboxId ?? null;
  const ciphertext = cipherOf(writer).encrypt(input.value, secretContext(accountId, sandboxId, input.name));
  const valueBytes = Buffer.byteLength(input.value);
  const secret = { accountId, sandboxId, name: input.name, ciphertext, inject: input.inject ?? null };
  return policy.putSecret(writer.pg, secret, (usage) => admitSecret(writer.limits, usage, sandboxId, valueBytes));
}

/** The caps on the account's and the sandbox's secrets, count and bytes (the one replaced does not count twice). */
function admitSecret(config: SecretLimits, usage: SecretUsage, sandboxId: string | null, valueBytes: number): void {
  if (usage.total >= config.PADDOCK_SECRETS_MAX_PER_ACCOUNT) {
    throw new ApiError('secret_limit_reached', `The account holds ${usage.total} secrets, the most it may (PADDOCK_SECRETS_MAX_PER_ACCOUNT). Delete some first.`);
  }
  if (sandboxId && usage.scoped >= config.PADDOCK_SECRETS_MAX_PER_SANDBOX) {
    throw new ApiError('secret_limit_reached', `Sandbox ${sandboxId} holds ${usage.scoped} secrets, the most one sandbox may. Delete some first.`);
  }
  const bytes = usage.bytes + valueBytes;
  if (bytes > config.PADDOCK_SECRETS_MAX_BYTES_PER_ACCOUNT) {
    throw new ApiError(
      'secret_limit_reached',
      `The account's secrets would hold ${bytes} bytes together, over the ${config.PADDOCK_SECRETS_MAX_BYTES_PER_ACCOUNT} it may. Delete some first.`,
    );
  }
  const scopedBytes = usage.scopedBytes + valueBytes;
  if (sandboxId && scopedBytes > config.PADDOCK_SECRETS_MAX_BYTES_PER_SANDBOX) {
    throw new ApiError(
      'secret_limit_reached',
      `Sandbox ${sandboxId}'s secrets would hold ${scopedBytes} bytes together, over the ${config.PADDOCK_SECRETS_MAX_BYTES_PER_SANDBOX} one sandbox may. Delete some first.`,
    );
  }
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
