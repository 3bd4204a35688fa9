import type { Pool } from 'pg';
import type { Injection } from '../network/brokered.ts';

// The policy aggregate of an account: its allowlist and its secrets (account-wide and
// per-sandbox). Every statement on those two tables is here, each a named statement on the
// driver's pool (PostgreSQL plans it once per connection), so every caller, the exec path's
// included, reaches them the same way. Secrets travel as ciphertexts: decrypting is the caller's.

export interface Allowlist {
  /** Empty: every command is allowed. */
  commands: string[];
  updatedAt: Date | null;
}

export interface StoredSecret {
  name: string;
  sandboxId: string | null;
  ciphertext: Buffer;
  /** Brokered by the sandbox's egress rather than given as a variable; null for an ordinary secret. */
  inject: Injection | null;
}

/** The secrets that reach a sandbox, as of one version of its account's secrets. */
export interface SecretsRead {
  /** Changes with every write to the account's secrets; null while it never had any. */
  version: string | null;
  /** The ciphertexts; undefined when `version` is the one the caller said it holds. */
  stored?: StoredSecret[];
}

export interface SecretSummary {
  name: string;
  sandbox_id: string | null;
  created_at: Date;
  inject: Injection | null;
}

/** What a secret's write must fit in: the account's other secrets, and those of its scope. */
export interface SecretUsage {
  /** The account's secrets but the one written. */
  total: number;
  /** Of those, the ones in the written secret's scope (its sandbox, or account-wide). */
  scoped: number;
  /** Their ciphertexts' bytes: a value plus a fixed overhead, so an upper bound of the values'. */
  bytes: number;
  scopedBytes: number;
}

const ALLOWLIST = { name: 'paddock-allowlist', text: 'select commands, updated_at from allowlists where account_id = $1' };
const PUT_ALLOWLIST = {
  name: 'paddock-put-allowlist',
  text: `insert into allowlists (account_id, commands, updated_at) values ($1, $2::jsonb, now())
         on conflict (account_id) do update set commands = excluded.commands, updated_at = now()
         returning commands, updated_at`,
};
const CLEAR_ALLOWLIST = { name: 'paddock-clear-allowlist', text: 'delete from allowlists where account_id = $1' };
// The account's secrets that reach an exec in the sandbox $2, account-wide first, so that the
// sandbox's own win on a name clash when applied in order; none when their version is $3, the
// one the caller holds. One row at least, for the version, read in the rows' snapshot.
const SECRETS = {
  name: 'paddock-secrets-for-sandbox',
  text: `select v.version, x.name, x.sandbox_id, x.ciphertext, x.inject
           from (select (select version from secret_versions where account_id = $1) as version) v
           left join secrets x on x.account_id = $1 and (x.sandbox_id is null or x.sandbox_id = $2) and v.version is distinct from $3::uuid
          order by x.sandbox_id nulls first, x.name`,
};
const LIST_SECRETS = {
  name: 'paddock-list-secrets',
  text: `select name, sandbox_id, created_at, inject from secrets
          where account_id = $1 and ($2::text is null or sandbox_id = $2)
          order by sandbox_id nulls first, name`,
};
const DELETE_SECRET = {
  name: 'paddock-delete-secret',
  text: 'delete from secrets where account_id = $1 and name = $2 and sandbox_id is not distinct from $3 returning inject',
};
// One writer per account at a time, so the limits hold under concurrent requests from any number
// of replicas; the usage is read after the lock, in the transaction's own snapshot, with the
// injection of the secret the write replaces (its sandboxes' egress must drop a brokered one).
const LOCK_SECRETS = { name: 'paddock-lock-secrets', text: 'select pg_advisory_xact_lock(hashtextextended($1, 20261122))' };
const SECRET_USAGE = {
  name: 'paddock-secret-usage',
  text: `select count(*)::int as total,
                (count(*) filter (where sandbox_id is not distinct from $2))::int as scoped,
                coalesce(sum(octet_length(ciphertext)), 0)::bigint as bytes,
                coalesce(sum(octet_length(ciphertext)) filter (where sandbox_id is not distinct from $2), 0)::bigint as scoped_bytes,
                (select inject from secrets where account_id = $1 and name = $3 and sandbox_id is not distinct from $2) as replaced_inject
           from secrets
          where account_id = $1 and not (name = $3 and sandbox_id is not distinct from $2)`,
};
const UPSERT_ACCOUNT_SECRET = {
  name: 'paddock-upsert-account-secret',
  text: `insert into secrets (account_id, sandbox_id, name, ciphertext, inject) values ($1, null, $2, $3, $4::jsonb)
         on conflict (account_id, name) where sandbox_id is null do update set ciphertext = excluded.ciphertext, inject = excluded.inject, updated_at = now()
         returning name, sandbox_id, created_at, inject, (xmax <> 0) as replaced`,
};
const UPSERT_SANDBOX_SECRET = {
  name: 'paddock-upsert-sandbox-secret',
  text: `insert into secrets (account_id, sandbox_id, name, ciphertext, inject) values ($1, $5, $2, $3, $4::jsonb)
         on conflict (account_id, sandbox_id, name) where sandbox_id is not null do update set ciphertext = excluded.ciphertext, inject = excluded.inject, updated_at = now()
         returning name, sandbox_id, created_at, inject, (xmax <> 0) as replaced`,
};

export function allowlistOf(row: { commands: string[]; updated_at: Date | string } | undefined): Allowlist {
  return row ? { commands: row.commands, updatedAt: new Date(row.updated_at) } : { commands: [], updatedAt: null };
}

/** A secret's row as the reads of a sandbox's secrets bring it. */
export interface StoredSecretRow {
  name: string;
  sandbox_id: string | null;
  ciphertext: Buffer;
  inject: Injection | null;
}

export function storedSecretsOf(rows: StoredSecretRow[]): StoredSecret[] {
  return rows.map((r) => ({ name: r.name, sandboxId: r.sandbox_id, ciphertext: r.ciphertext, inject: r.inject }));
}

export async function getAllowlist(pool: Pool, accountId: string): Promise<Allowlist> {
  return allowlistOf((await pool.query({ ...ALLOWLIST, values: [accountId] })).rows[0]);
}

export async function putAllowlist(pool: Pool, accountId: string, commands: string[]): Promise<Allowlist> {
  return allowlistOf((await pool.query({ ...PUT_ALLOWLIST, values: [accountId, JSON.stringify(commands)] })).rows[0]);
}

export async function clearAllowlist(pool: Pool, accountId: string): Promise<void> {
  await pool.query({ ...CLEAR_ALLOWLIST, values: [accountId] });
}

/** The secrets that reach the sandbox; their ciphertexts only if their version is not `heldVersion`. */
export async function secretsForSandbox(pool: Pool, accountId: string, sandboxId: string, heldVersion?: string): Promise<SecretsRead> {
  type Row = { version: string | null } & ({ name: null } | StoredSecretRow);
  const rows = (await pool.query<Row>({ ...SECRETS, values: [accountId, sandboxId, heldVersion ?? null] })).rows;
  const version = rows[0]?.version ?? null;
  if (heldVersion !== undefined && version === heldVersion) return { version };
  return { version, stored: storedSecretsOf(rows.filter((r): r is Row & StoredSecretRow => r.name !== null)) };
}

export async function listSecrets(pool: Pool, accountId: string, sandboxId: string | undefined): Promise<SecretSummary[]> {
  return (await pool.query<SecretSummary>({ ...LIST_SECRETS, values: [accountId, sandboxId ?? null] })).rows;
}

/** The secret removed (its injection, the rest being known), or undefined when there was none. */
export async function deleteSecret(pool: Pool, accountId: string, name: string, sandboxId: string | undefined): Promise<{ inject: Injection | null } | undefined> {
  return (await pool.query<{ inject: Injection | null }>({ ...DELETE_SECRET, values: [accountId, name, sandboxId ?? null] })).rows[0];
}

/**
 * Creates or replaces a secret in one transaction, under the account's lock: `admit` sees the
 * usage of every other secret and throws to refuse the write (nothing is written then).
 * `replacedInject`: the injection of the secret replaced (null for none, or an ordinary one).
 */
export async function putSecret(
  pool: Pool,
  secret: { accountId: string; sandboxId: string | null; name: string; ciphertext: Buffer; inject: Injection | null },
  admit: (usage: SecretUsage) => void,
): Promise<{ row: SecretSummary; replaced: boolean; replacedInject: Injection | null }> {
  const { accountId, sandboxId, name, ciphertext } = secret;
  const inject = secret.inject && JSON.stringify(secret.inject);
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('begin');
    await client.query({ ...LOCK_SECRETS, values: [`secrets:${accountId}`] });
    const usage = (await client.query({ ...SECRET_USAGE, values: [accountId, sandboxId, name] })).rows[0] as {
      total: number;
      scoped: number;
      bytes: string;
      scoped_bytes: string;
      replaced_inject: Injection | null;
    };
    admit({ total: usage.total, scoped: usage.scoped, bytes: Number(usage.bytes), scopedBytes: Number(usage.scoped_bytes) });
    const upsert = sandboxId
      ? { ...UPSERT_SANDBOX_SECRET, values: [accountId, name, ciphertext, inject, sandboxId] }
      : { ...UPSERT_ACCOUNT_SECRET, values: [accountId, name, ciphertext, inject] };
    const row = (await client.query<SecretSummary & { replaced: boolean }>(upsert)).rows[0]!;
    await client.query('commit');
    const { replaced, ...summary } = row;
    return { row: summary, replaced, replacedInject: usage.replaced_inject };
  } catch (err) {
    // A connection that cannot roll back is not given back to the pool.
    await client.query('rollback').catch((rollbackErr: Error) => (broken = rollbackErr));
    throw err;
  } finally {
    client.release(broken);
  }
}

// Every stored secret, for a change of the key that encrypts them (scripts/reencrypt-secrets.ts).

/** A secret's row as the key rotation reads it. */
export interface SecretRecord {
  /** bigserial: pg answers a string. */
  id: string;
  account_id: string;
  sandbox_id: string | null;
  name: string;
  ciphertext: Buffer;
}

const SECRET_RECORD_COLUMNS = 'id, account_id, sandbox_id, name, ciphertext';

/** The secrets after the id `after`, in id order: keyset pages, none read twice, rows added meanwhile met. */
export async function secretsAfter(pool: Pool, after: string, limit: number): Promise<SecretRecord[]> {
  return (await pool.query<SecretRecord>(`select ${SECRET_RECORD_COLUMNS} from secrets where id > $1 order by id limit $2`, [after, limit])).rows;
}

export async function findSecretRecord(pool: Pool, id: string): Promise<SecretRecord | undefined> {
  return (await pool.query<SecretRecord>(`select ${SECRET_RECORD_COLUMNS} from secrets where id = $1`, [id])).rows[0];
}

/** Replaces the secret's ciphertext only if it still holds `expected`; whether it did. */
export async function replaceSecretCiphertext(pool: Pool, id: string, expected: Buffer, ciphertext: Buffer): Promise<boolean> {
  const { rowCount } = await pool.query('update secrets set ciphertext = $1 where id = $2 and ciphertext = $3', [ciphertext, id, expected]);
  return rowCount === 1;
}
