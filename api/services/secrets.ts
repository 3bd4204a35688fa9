import type { Pool } from 'pg';
import type { Config } from '../../shared/config.ts';
import { ApiError } from '../../shared/errors.ts';
import type { SecretCipher } from '../../shared/secrets/cipher.ts';
import { secretContext } from '../../shared/secrets/cipher.ts';
import * as policy from '../../shared/repositories/policy.ts';
import type { SecretSummary, SecretUsage } from '../../shared/repositories/policy.ts';
import type { Injection } from '../../shared/network/brokered.ts';
import type { SandboxEngine } from '../../shared/sandboxes/engine.ts';
import { cipherOf } from '../../shared/secrets/opening.ts';

export type SecretRow = SecretSummary;

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
