import type { Pool } from 'pg';
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from '../db/placeholders.ts';
import type { DestroyReason, Sandbox } from '../db/entities.ts';
import type { Statement } from '../db/batch.ts';
import { dateOf } from '../db/timestamps.ts';
import { SANDBOX_COLUMNS, type SandboxRow as SnapshotRow } from '../sandboxes/snapshot.ts';
import type { NetworkPolicy } from '../network/policy.ts';
import { allowlistOf, storedSecretsOf, type Allowlist, type SecretsRead, type StoredSecretRow } from './policy.ts';

// The sandbox aggregate's one way to the database. Its reads are named statements on the driver's
// pool: every sandbox route reads its sandbox first, and the rows are only presented or inspected,
// never flushed back through the ORM. Its writes are statements for the batched transactions that
// send them with their events: its birth in the create's (insertSandboxStatement), its state
// changes in sandboxes/transitions.ts.

// The secrets that reach the sandbox $1 of the account $2, account-wide first, so that the
// sandbox's own win on a name clash when applied in order.
const SECRETS_JSON = `(select coalesce(json_agg(json_build_object('name', x.name, 'sandbox_id', x.sandbox_id, 'ciphertext', encode(x.ciphertext, 'base64'), 'inject', x.inject)
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
    sql: `insert into sandboxes (id, account_id, state, status, image, metadata, env, created_at, ready_at, expires_at, expiry_warning_at, deployment, snapshot_on_destroy, network)
     values ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, $10, $11, $12, $13, $14::jsonb)`,
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
      sandbox.snapshotOnDestroy ?? false,
      JSON.stringify(sandbox.network),
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
export async function readOwnSandbox(pool: Pool, accountId: string, id: string): Promise<Sandbox | undefined> {
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
export async function readOwnSandboxWithPolicy(
  pool: Pool,
  accountId: string,
  id: string,
  heldVersion?: string,
): Promise<(SandboxWithPolicy & { /** The read as a read view keeps it (keptSandboxWithPolicy). */ kept(): string }) | undefined> {
  const row = (await pool.query<PolicyRow>({ ...OWN_SANDBOX_WITH_POLICY, values: [id, accountId, heldVersion ?? null] })).rows[0];
  if (!row) return undefined;
  // Kept without the secrets' ciphertexts: their version only, or the empty list there is.
  return { ...sandboxWithPolicyOf(row), kept: () => JSON.stringify({ ...row, secrets: row.secrets?.length === 0 ? [] : null }) };
}

/** A read kept by readOwnSandboxWithPolicy's `kept`, its secrets' ciphertexts left out; undefined when the text is not one. */
export function keptSandboxWithPolicy(text: string): SandboxWithPolicy | undefined {
  try {
    const row = JSON.parse(text) as PolicyRow;
    return typeof row?.id === 'string' && typeof row.account_id === 'string' ? sandboxWithPolicyOf(row) : undefined;
  } catch {
    return undefined;
  }
}

type PolicyRow = SandboxRow & {
  allowlist: { commands: string[]; updated_at: string } | null;
  secrets_version: string | null;
  secrets: (Omit<StoredSecretRow, 'ciphertext'> & { ciphertext: string })[] | null;
};

function sandboxWithPolicyOf(row: PolicyRow): SandboxWithPolicy {
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
  if (rows.length === 0 && options.after !== undefined && !(await readOwnSandbox(pool, accountId, options.after))) return undefined;
  const page = rows.slice(0, options.limit).map(sandboxOf);
  return { sandboxes: page, next: rows.length > options.limit ? page.at(-1)?.id : undefined };
}

// The state changes. Each applies only from the state it expects (sandboxes/transitions.ts says why).

/** pending → running; a row (its id) when it applied. */
export function runningStatement(id: string, readyAt: Date): Statement {
  return { sql: `update sandboxes set status = 'running', ready_at = $1 where id = $2 and state = 'active' and status = 'pending' returning id`, params: [readyAt, id] };
}

/** A row when the sandbox runs since `readyAt`: the running update sent ahead in the same batch applied. */
export function runningSinceStatement(id: string, readyAt: Date): Statement {
  return { sql: `select 1 from sandboxes where id = $1 and status = 'running' and ready_at = $2`, params: [id, readyAt] };
}

/** active → destroyed (status failed when its reason is, else terminated); the row as it now is when it applied. */
export function destroyedStatement(id: string, reason: DestroyReason, destroyedAt: Date, failureMessage: string | undefined, finalSnapshotId?: string): Statement {
  return {
    sql: `update sandboxes
            set state = 'destroyed',
                status = case when coalesce(destroy_reason, $1) = 'failed' then 'failed' else 'terminated' end,
                destroyed_at = $2,
                destroy_reason = coalesce(destroy_reason, $1),
                failure_message = coalesce($3, failure_message),
                final_snapshot_id = coalesce($5, final_snapshot_id)
          where id = $4 and state = 'active'
          returning ${SANDBOX_COLUMNS}`,
    params: [reason, destroyedAt, failureMessage ? failureMessage.slice(0, 1000) : null, id, finalSnapshotId ?? null],
  };
}

/** The secrets of the sandbox's own, which go with it. */
export function dropOwnSecretsStatement(id: string): Statement {
  return { sql: 'delete from secrets where sandbox_id = $1', params: [id] };
}

/** Marks an active sandbox near its cap warned, once; the row when it applied. */
/**
 * What the sandbox's egress filter has refused, recorded when it grew and no network.refused was
 * recorded in the last minute (so at most one a minute); the sandbox as now where it applied.
 */
export function networkRefusedStatement(id: string, refused: number): Statement {
  return {
    sql: `update sandboxes set network_refused = $2, network_refused_at = now()
           where id = $1 and state = 'active' and network_refused < $2
             and (network_refused_at is null or network_refused_at <= now() - interval '1 minute')
           returning ${SANDBOX_COLUMNS}`,
    params: [id, Math.min(refused, 2_147_483_647)],
  };
}

export function expiryWarnedStatement(id: string): Statement {
  // Only once its warning is due: a job left behind by a moved end (its own timeout) is early.
  // A second's leeway for a delayed job promoted by a clock a little ahead of this database's.
  return {
    sql: `update sandboxes set expiry_warned_at = now()
           where id = $1 and state = 'active' and expiry_warned_at is null and expires_at > now()
             and expiry_warning_at <= now() + interval '1 second'
           returning ${SANDBOX_COLUMNS}`,
    params: [id],
  };
}

/**
 * → terminating, when it was active and not asked for yet: the sandbox as it now is, else
 * undefined. With `accountId`, only that account's (a user's DELETE finds and marks in one). With
 * `dueBy`, only when it expires by then: its end moved later meanwhile (moveSandboxEnd) wins.
 */
export async function markSandboxTerminating(pool: Pool, id: string, reason: DestroyReason, accountId?: string, dueBy?: Date): Promise<Sandbox | undefined> {
  const { rows } = await pool.query<SandboxRow>({
    name: 'paddock-sandbox-terminating',
    text: `update sandboxes set status = 'terminating', destroy_reason = $2
            where id = $1 and ($3::text is null or account_id = $3) and state = 'active' and status <> 'terminating'
              and ($4::timestamptz is null or expires_at <= $4)
            returning ${SANDBOX_COLUMNS}, env`,
    values: [id, reason, accountId ?? null, dueBy ?? null],
  });
  return rows[0] && sandboxOf(rows[0]);
}

/** The sandbox's end moved: the row as it now is, with where its end and warning were before. */
export interface MovedEnd {
  sandbox: Sandbox;
  previous: { expiresAt: Date; expiryWarningAt: Date | null };
}

/**
 * Moves the account's sandbox's end (and its warning's moment), while it is active and not asked
 * to be destroyed: one conditional update, so a destroy (the reaper's among them, which marks the
 * sandbox terminating only while it is due) and a move never both apply. A warning already sent is
 * sent again only when the new end leaves room for one after `now`. Undefined where it did not apply.
 */
export async function moveSandboxEnd(
  pool: Pool,
  accountId: string,
  id: string,
  end: { expiresAt: Date; expiryWarningAt: Date | null; now: Date },
): Promise<MovedEnd | undefined> {
  const { rows } = await pool.query<SandboxRow & { previous_expires_at: Date; previous_expiry_warning_at: Date | null }>({
    name: 'paddock-sandbox-move-end',
    text: `with previous as (select id, expires_at, expiry_warning_at from sandboxes where id = $1 and account_id = $2 for update)
           update sandboxes s
              set expires_at = $3, expiry_warning_at = $4,
                  expiry_warned_at = case when $4::timestamptz > $5::timestamptz then null else s.expiry_warned_at end
             from previous p
            where s.id = p.id and s.state = 'active' and s.status <> 'terminating'
            returning ${SANDBOX_COLUMNS.replace(/(\w+)/g, 's.$1')}, s.env, p.expires_at as previous_expires_at, p.expiry_warning_at as previous_expiry_warning_at`,
    values: [id, accountId, end.expiresAt, end.expiryWarningAt, end.now],
  });
  const row = rows[0];
  if (!row) return undefined;
  return {
    sandbox: { ...sandboxOf(row), expiryWarningAt: end.expiryWarningAt },
    previous: { expiresAt: dateOf(row.previous_expires_at), expiryWarningAt: row.previous_expiry_warning_at && dateOf(row.previous_expiry_warning_at) },
  };
}

/**
 * The account's running sandbox's egress set to `policy`, with `apply` (the runtime's change) run
 * while its row is held: two changes to one sandbox, through any replicas, reach the runtime and
 * the row in the same order. The sandbox as now; `not_running` (neither applied) for one that is
 * pending, being destroyed or destroyed; undefined for none of the account's.
 */
export async function setSandboxNetwork(
  pool: Pool,
  accountId: string,
  id: string,
  policy: NetworkPolicy,
  apply: () => Promise<void>,
): Promise<Sandbox | 'not_running' | undefined> {
  const client = await pool.connect();
  let failed = false;
  try {
    await client.query('begin');
    const { rows } = await client.query<{ state: string; status: string }>({
      name: 'paddock-sandbox-network-lock',
      text: 'select state, status from sandboxes where id = $1 and account_id = $2 for update',
      values: [id, accountId],
    });
    const row = rows[0];
    if (!row || row.state !== 'active' || row.status !== 'running') {
      await client.query('rollback');
      return row ? 'not_running' : undefined;
    }
    try {
      await apply();
    } catch (err) {
      await client.query('rollback');
      throw err;
    }
    const updated = await client.query<SandboxRow>({
      name: 'paddock-sandbox-network-set',
      text: `update sandboxes set network = $3::jsonb where id = $1 and account_id = $2 returning ${SANDBOX_COLUMNS}, env`,
      values: [id, accountId, JSON.stringify(policy)],
    });
    await client.query('commit');
    return sandboxOf(updated.rows[0]!);
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    // A connection whose transaction broke midway is not handed to the next user.
    client.release(failed ? true : undefined);
  }
}

// The sweeps' reads (workers/reaper.ts, metrics): this deployment's sandboxes, and those from
// before deployments were recorded. Bounded by `limit`: a sweep takes a batch at a time.
const OURS = '(deployment = $1 or deployment is null)';

/** Sweep reads, as statements: the history bench EXPLAINs these very texts. */
export const SWEEP_READS = {
  overdue: {
    name: 'paddock-sweep-overdue',
    text: `select id from sandboxes where state = 'active' and expires_at <= $2 and ${OURS} order by expires_at limit $3`,
  },
  stuckPending: {
    name: 'paddock-sweep-stuck-pending',
    text: `select id from sandboxes where state = 'active' and status = 'pending' and created_at <= $2 and ${OURS} limit $3`,
  },
  terminating: {
    name: 'paddock-sweep-terminating',
    text: `select id, destroy_reason, snapshot_on_destroy from sandboxes where state = 'active' and status = 'terminating' and ${OURS} limit $2`,
  },
} as const;

/** Active sandboxes of the deployment past their cap (`now`), the most overdue first. */
export async function overdueSandboxIds(pool: Pool, deployment: string, now: Date, limit: number): Promise<string[]> {
  return (await pool.query<{ id: string }>({ ...SWEEP_READS.overdue, values: [deployment, now, limit] })).rows.map((r) => r.id);
}

/** Sandboxes of the deployment still pending since before `cutoff`. */
export async function stuckPendingSandboxIds(pool: Pool, deployment: string, cutoff: Date, limit: number): Promise<string[]> {
  return (await pool.query<{ id: string }>({ ...SWEEP_READS.stuckPending, values: [deployment, cutoff, limit] })).rows.map((r) => r.id);
}

/** Sandboxes of the deployment asked to be destroyed and not yet destroyed, with the reason asked. */
export async function terminatingSandboxes(pool: Pool, deployment: string, limit: number): Promise<{ id: string; destroyReason: DestroyReason | null; snapshotOnDestroy: boolean }[]> {
  const { rows } = await pool.query<{ id: string; destroy_reason: DestroyReason | null; snapshot_on_destroy: boolean }>({ ...SWEEP_READS.terminating, values: [deployment, limit] });
  return rows.map((r) => ({ id: r.id, destroyReason: r.destroy_reason, snapshotOnDestroy: r.snapshot_on_destroy }));
}

/** Active sandboxes of the deployment whose expiry warning is due and not sent: their delayed job was lost. */
export async function expiryWarningsDue(em: EntityManager, deployment: string, limit: number): Promise<string[]> {
  const rows = await execute<{ id: string }>(
    em,
    `select id from sandboxes where state = 'active' and expiry_warned_at is null
        and expiry_warning_at <= now() and expires_at > now() and (deployment = $1 or deployment is null) limit $2`,
    [deployment, limit],
  );
  return rows.map((r) => r.id);
}

/**
 * Of `ids`, those with an active row or held by the warm pool (no row until claimed). One
 * statement, one snapshot: a claim committing between two reads would be in neither.
 */
export async function activeOrPooledIds(pool: Pool, ids: readonly string[]): Promise<Set<string>> {
  const { rows } = await pool.query<{ id: string }>({
    name: 'paddock-active-or-pooled',
    text: `select id from sandboxes where id = any($1) and state = 'active' union all select id from warm_sandboxes where id = any($1)`,
    values: [ids],
  });
  return new Set(rows.map((r) => r.id));
}

/** The account's sandboxes not destroyed (at most its concurrent cap of them). */
export async function activeSandboxIdsOf(pool: Pool, accountId: string): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>({
    name: 'paddock-account-active-ids',
    text: `select id from sandboxes where account_id = $1 and state = 'active'`,
    values: [accountId],
  });
  return rows.map((r) => r.id);
}

/** How many sandboxes are not destroyed, by status. */
export async function activeCountsByStatus(pool: Pool): Promise<{ status: string; count: number }[]> {
  const { rows } = await pool.query<{ status: string; n: number }>({
    name: 'paddock-active-by-status',
    text: `select status, count(*)::int as n from sandboxes where state = 'active' group by status`,
  });
  return rows.map((r) => ({ status: r.status, count: r.n }));
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
    snapshotOnDestroy: row.snapshot_on_destroy,
    finalSnapshotId: row.final_snapshot_id,
    network: row.network,
    networkRefused: row.network_refused,
  };
  return sandbox as Sandbox;
}

/** Why the sandbox was destroyed, when it was; undefined for one not destroyed or not found. */
export async function destroyReasonOf(pool: Pool, id: string): Promise<DestroyReason | undefined> {
  const { rows } = await pool.query<{ destroy_reason: DestroyReason | null }>({ name: 'paddock-sandbox-destroy-reason', text: 'select destroy_reason from sandboxes where id = $1', values: [id] });
  return rows[0]?.destroy_reason ?? undefined;
}
