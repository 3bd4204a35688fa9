import type { Pool } from 'pg';
import type { Sandbox } from '../db/entities.ts';
import type { Statement } from '../db/batch.ts';
import { dateOf } from '../db/timestamps.ts';
import { SANDBOX_COLUMNS, type SandboxRow as SnapshotRow } from '../sandboxes/snapshot.ts';
import { allowlistOf, storedSecretsOf, type Allowlist, type SecretsRead } from './policy.ts';

// The reads of the sandbox aggregate, as named statements on the driver's pool: every sandbox
// route reads its sandbox first, and the rows are only presented or inspected, never flushed back
// through the ORM. Its birth is one statement in the create's transaction, sent with its events
// (insertSandboxStatement); its state changes are transactions with their events
// (sandboxes/transitions.ts).

// The secrets that reach the sandbox $1 of the account $2, account-wide first, so that the
// sandbox's own win on a name clash when applied in order.
const SECRETS_JSON = `(select coalesce(json_agg(json_build_object('name', x.name, 'sandbox_id', x.sandbox_id, 'ciphertext', encode(x.ciphertext, 'base64'))
                                     order by x.sandbox_id nulls first, x.name), '[]'::json)
              from secrets x where x.account_id = $2 and (x.sandbox_id is null or x.sandbox_id = $1))`;

interface SandboxRow extends SnapshotRow {
  env: Record<string, string>;
}

const OWN_SANDBOX = {
  name: 'paddock-own-sandbox',
  text: `select ${SANDBOX_COLUMNS}, env from sandboxes where id = $1 and account_id = $2`,
};

// The sandbox and the policy an exec in it obeys, in one round trip: the exec path's only read.
// The secrets' ciphertexts come only when their version is not $3, the one the caller holds
// opened: at the caps an exec would otherwise carry, parse and decrypt half a megabyte each time.
const OWN_SANDBOX_WITH_POLICY = {
  name: 'paddock-own-sandbox-with-policy',
  text: `select ${SANDBOX_COLUMNS}, env,
           (select row_to_json(a) from (select commands, updated_at from allowlists where account_id = $2) a) as allowlist,
           v.version as secrets_version,
           case when v.version = $3::uuid then null else ${SECRETS_JSON} end as secrets
      from sandboxes, (select (select version from secret_versions where account_id = $2) as version) v
     where id = $1 and account_id = $2`,
};

/**
 * A new sandbox's row as one statement, with no unit of work to compute, for the create's
 * transaction (which holds its account's lock) to send with the sandbox's events.
 */
export function insertSandboxStatement(sandbox: Sandbox): Statement {
  return {
    sql: `insert into sandboxes (id, account_id, state, status, image, metadata, env, created_at, ready_at, expires_at, expiry_warning_at, deployment)
     values (?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?, ?, ?)`,
    params: [
      sandbox.id,
      sandbox.accountId,
      sandbox.state,
      sandbox.status,
      sandbox.image,
      JSON.stringify(sandbox.metadata),
      JSON.stringify(sandbox.env),
      sandbox.createdAt,
      sandbox.readyAt ?? null,
      sandbox.expiresAt,
      sandbox.expiryWarningAt ?? null,
      sandbox.deployment ?? null,
    ],
  };
}

const SANDBOX = {
  name: 'paddock-sandbox',
  text: `select ${SANDBOX_COLUMNS}, env from sandboxes where id = $1`,
};

/** The sandbox, whoever's it is: for the workers, which act for no account. */
export async function findSandbox(pool: Pool, id: string): Promise<Sandbox | undefined> {
  const row = (await pool.query<SandboxRow>({ ...SANDBOX, values: [id] })).rows[0];
  return row && sandboxOf(row);
}

/** The account's sandbox, or undefined (another account's is not told apart from none). */
export async function findOwnSandbox(pool: Pool, accountId: string, id: string): Promise<Sandbox | undefined> {
  const row = (await pool.query<SandboxRow>({ ...OWN_SANDBOX, values: [id, accountId] })).rows[0];
  return row && sandboxOf(row);
}

/** A sandbox, its account's allowlist, and the secrets that reach it. */
export interface SandboxWithPolicy {
  sandbox: Sandbox;
  allowlist: Allowlist;
  secrets: SecretsRead;
}

/**
 * The account's sandbox with the policy an exec in it obeys, or undefined. `heldVersion`: the
 * version of the account's secrets the caller holds opened, if any; their ciphertexts then come
 * only if they changed since.
 */
export async function findOwnSandboxWithPolicy(pool: Pool, accountId: string, id: string, heldVersion?: string): Promise<SandboxWithPolicy | undefined> {
  type Row = SandboxRow & {
    allowlist: { commands: string[]; updated_at: string } | null;
    secrets_version: string | null;
    secrets: { name: string; sandbox_id: string | null; ciphertext: string }[] | null;
  };
  const row = (await pool.query<Row>({ ...OWN_SANDBOX_WITH_POLICY, values: [id, accountId, heldVersion ?? null] })).rows[0];
  if (!row) return undefined;
  return {
    sandbox: sandboxOf(row),
    allowlist: allowlistOf(row.allowlist ?? undefined),
    secrets: { version: row.secrets_version, stored: row.secrets ? storedSecretsOf(row.secrets.map((s) => ({ ...s, ciphertext: Buffer.from(s.ciphertext, 'base64') }))) : undefined },
  };
}

export interface SandboxPage {
  sandboxes: Sandbox[];
  /** The `after` of the next page; undefined on the last. */
  next?: string;
}

/**
 * One page of the account's sandboxes, newest first (ties by id), after the sandbox `after`: a
 * keyset over (created_at, id), so a page costs the same however many sandboxes the account has
 * had. One statement per shape, each served by an index (account_id[, state], created_at, id):
 * an optional filter written as `$n is null or …` would leave a generic plan scanning them all.
 * Undefined when `after` is not one of the account's sandboxes.
 */
export async function listOwnSandboxes(
  pool: Pool,
  accountId: string,
  options: { state: 'active' | 'destroyed' | 'all'; after?: string; limit: number },
): Promise<SandboxPage | undefined> {
  const filtered = options.state !== 'all';
  const values: unknown[] = [accountId, options.limit + 1];
  if (filtered) values.push(options.state);
  if (options.after !== undefined) values.push(options.after);
  const cursorParam = `$${values.length}`;
  const text = `select ${SANDBOX_COLUMNS}, env from sandboxes
     where account_id = $1${filtered ? ' and state = $3' : ''}
     ${options.after === undefined ? '' : `and (created_at, id) < (select created_at, id from sandboxes where id = ${cursorParam} and account_id = $1)`}
     order by created_at desc, id desc limit $2`;
  const name = `paddock-list-sandboxes-${options.state}${options.after === undefined ? '' : '-after'}`;
  const rows = (await pool.query<SandboxRow>({ name, text, values })).rows;
  // An empty page after an unknown (or another account's) cursor would read as "no more".
  if (rows.length === 0 && options.after !== undefined && !(await findOwnSandbox(pool, accountId, options.after))) return undefined;
  const page = rows.slice(0, options.limit).map(sandboxOf);
  return { sandboxes: page, next: rows.length > options.limit ? page.at(-1)?.id : undefined };
}

function sandboxOf(row: SandboxRow): Sandbox {
  const sandbox = {
    id: row.id,
    accountId: row.account_id,
    state: row.state,
    status: row.status,
    image: row.image,
    metadata: row.metadata,
    env: row.env,
    createdAt: dateOf(row.created_at),
    readyAt: dateOf(row.ready_at),
    expiresAt: dateOf(row.expires_at),
    destroyedAt: dateOf(row.destroyed_at),
    destroyReason: row.destroy_reason,
    failureMessage: row.failure_message,
  };
  return sandbox as Sandbox;
}
