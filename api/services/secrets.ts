import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { ApiError } from '../../shared/errors.ts';
import type { SecretCipher} from '../../shared/secrets/cipher.ts';
import { secretContext } from '../../shared/secrets/cipher.ts';
import type { AppDeps } from '../context.ts';
import { findOwnSandbox } from './sandboxes.ts';

export interface SecretRow {
  name: string;
  sandbox_id: string | null;
  created_at: Date;
}

export function cipherOf(deps: AppDeps): SecretCipher {
  if (!deps.secretCipher) {
    throw new ApiError('service_unavailable', 'Secrets are not configured on this server (PADDOCK_SECRETS_KEY).');
  }
  return deps.secretCipher;
}

/** A sandbox scope must be one of the caller's sandboxes, and still active to take new secrets. */
export async function checkScope(pool: Pool, accountId: string, sandboxId: string | undefined, forWrite: boolean): Promise<void> {
  if (sandboxId === undefined) return;
  const sandbox = await findOwnSandbox(pool, accountId, sandboxId);
  if (forWrite && sandbox.state !== 'active') throw new ApiError('sandbox_not_running', `Sandbox ${sandboxId} is destroyed.`);
}

/** Creates or replaces a secret; answers whether it replaced one. */
export async function putSecret(
  deps: AppDeps,
  em: EntityManager,
  accountId: string,
  input: { name: string; value: string; sandboxId?: string },
): Promise<{ row: SecretRow; replaced: boolean }> {
  const sandboxId = input.sandboxId ?? null;
  const ciphertext = cipherOf(deps).encrypt(input.value, secretContext(accountId, sandboxId, input.name));
  const conflict = sandboxId ? '(account_id, sandbox_id, name) where sandbox_id is not null' : '(account_id, name) where sandbox_id is null';
  return em.transactional(async (tx) => {
    // One writer per account at a time, so the limits hold under concurrent requests from any
    // number of replicas; the counts below are read after the lock, in a snapshot of their own.
    await tx.execute('select pg_advisory_xact_lock(hashtextextended(?, 20261122))', [`secrets:${accountId}`]);
    await checkSecretLimits(deps, tx, accountId, sandboxId, input.name, Buffer.byteLength(input.value));
    const [row] = await tx.execute<(SecretRow & { replaced: boolean })[]>(
      `insert into secrets (account_id, sandbox_id, name, ciphertext) values (?, ?, ?, ?)
       on conflict ${conflict} do update set ciphertext = excluded.ciphertext, updated_at = now()
       returning name, sandbox_id, created_at, (xmax <> 0) as replaced`,
      [accountId, sandboxId, input.name, ciphertext],
    );
    return { row: row!, replaced: row!.replaced };
  });
}


/** Count and bytes of the account's and the sandbox's other secrets (the one being replaced does not count twice). */
async function checkSecretLimits(
  deps: AppDeps,
  tx: EntityManager,
  accountId: string,
  sandboxId: string | null,
  name: string,
  valueBytes: number,
): Promise<void> {
  // A ciphertext is its value plus a fixed overhead (nonce, tag, key id): its length bounds the
  // value's from above without decrypting anything.
  const [usage] = await tx.execute<{ total: string; scoped: string; bytes: string | null; scoped_bytes: string | null }[]>(
    `select count(*) as total,
            count(*) filter (where sandbox_id is not distinct from ?) as scoped,
            sum(octet_length(ciphertext)) as bytes,
            sum(octet_length(ciphertext)) filter (where sandbox_id is not distinct from ?) as scoped_bytes
       from secrets
      where account_id = ? and not (name = ? and sandbox_id is not distinct from ?)`,
    [sandboxId, sandboxId, accountId, name, sandboxId],
  );
  const config = deps.config;
  const total = Number(usage?.total ?? 0);
  const scoped = Number(usage?.scoped ?? 0);
  if (total >= config.PADDOCK_SECRETS_MAX_PER_ACCOUNT) {
    throw new ApiError('secret_limit_reached', `The account holds ${total} secrets, the most it may (PADDOCK_SECRETS_MAX_PER_ACCOUNT). Delete some first.`);
  }
  if (sandboxId && scoped >= config.PADDOCK_SECRETS_MAX_PER_SANDBOX) {
    throw new ApiError('secret_limit_reached', `Sandbox ${sandboxId} holds ${scoped} secrets, the most one sandbox may. Delete some first.`);
  }
  const bytes = Number(usage?.bytes ?? 0) + valueBytes;
  if (bytes > config.PADDOCK_SECRETS_MAX_BYTES_PER_ACCOUNT) {
    throw new ApiError(
      'secret_limit_reached',
      `The account's secrets would hold ${bytes} bytes together, over the ${config.PADDOCK_SECRETS_MAX_BYTES_PER_ACCOUNT} it may. Delete some first.`,
    );
  }
  const scopedBytes = Number(usage?.scoped_bytes ?? 0) + valueBytes;
  if (sandboxId && scopedBytes > config.PADDOCK_SECRETS_MAX_BYTES_PER_SANDBOX) {
    throw new ApiError(
      'secret_limit_reached',
      `Sandbox ${sandboxId}'s secrets would hold ${scopedBytes} bytes together, over the ${config.PADDOCK_SECRETS_MAX_BYTES_PER_SANDBOX} one sandbox may. Delete some first.`,
    );
  }
}

export async function listSecrets(em: EntityManager, accountId: string, sandboxId: string | undefined): Promise<SecretRow[]> {
  return em.execute<SecretRow[]>(
    `select name, sandbox_id, created_at from secrets
      where account_id = ? and (?::text is null or sandbox_id = ?)
      order by sandbox_id nulls first, name`,
    [accountId, sandboxId ?? null, sandboxId ?? null],
  );
}

export async function deleteSecret(em: EntityManager, accountId: string, name: string, sandboxId: string | undefined): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `delete from secrets where account_id = ? and name = ? and sandbox_id is not distinct from ? returning id`,
    [accountId, name, sandboxId ?? null],
  );
  return rows.length > 0;
}

/**
 * The environment an exec gets from secrets: the account's, then the sandbox's own, which win
 * on a name clash. Read at every exec, so a change applies to the next one.
 */
export async function secretEnv(deps: AppDeps, em: EntityManager, accountId: string, sandboxId: string): Promise<Record<string, string>> {
  const rows = await em.execute<{ name: string; sandbox_id: string | null; ciphertext: Buffer }[]>(
    `select name, sandbox_id, ciphertext from secrets
      where account_id = ? and (sandbox_id is null or sandbox_id = ?)
      order by sandbox_id nulls first`,
    [accountId, sandboxId],
  );
  if (rows.length === 0) return {};
  const cipher = cipherOf(deps);
  const env: Record<string, string> = {};
  for (const row of rows) {
    try {
      env[row.name] = cipher.decrypt(row.ciphertext, secretContext(accountId, row.sandbox_id, row.name));
    } catch {
      // A key lost or not yet rolled out to this replica (docs/deploy.md, rotation): the operator's
      // to fix, so the log names the row and the caller is told to retry, never shown a value.
      deps.log.error({ accountId, sandboxId: row.sandbox_id, secret: row.name }, 'stored secret decrypts with no configured key (PADDOCK_SECRETS_KEY, PADDOCK_SECRETS_KEY_PREVIOUS)');
      throw new ApiError('service_unavailable', `Secret ${row.name} cannot be read with this server's keys; the operator has been alerted.`);
    }
  }
  return env;
}
