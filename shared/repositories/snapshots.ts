import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from '../db/placeholders.ts';
import { newId } from '../ids.ts';
import type { RecordedEvent } from '../events/types.ts';
import { eventsLockStatement, recordEventUnderLock } from './events.ts';

// The snapshots aggregate's one way to the database: each snapshot's row (its bytes are the
// snapshot store's), the account's storage counted under the account's lock, and its events.

export interface SnapshotRow {
  id: string;
  account_id: string;
  sandbox_id: string;
  name: string | null;
  image: string;
  status: 'pending' | 'ready' | 'failed';
  failure_code: string | null;
  size_bytes: string;
  files: number;
  sha256: Buffer | null;
  created_at: Date;
  expires_at: Date;
}

const COLUMNS = 'id, account_id, sandbox_id, name, image, status, failure_code, size_bytes, files, sha256, created_at, expires_at';

/** Bytes the account's snapshots hold: the ready ones, and what pending ones have counted so far is not in it. */
const USED = `select coalesce(sum(size_bytes), 0)::bigint as used from snapshots where account_id = $1 and status = 'ready'`;

export type SnapshotBeginning =
  | { outcome: 'begun'; snapshot: SnapshotRow; usedBytes: number }
  | { outcome: 'sandbox_not_found' | 'sandbox_not_running' }
  | { outcome: 'limit_reached'; usedBytes: number }
  /** A final one: another ender's copy is under way (`pending`), or kept already (`ready`). */
  | { outcome: 'final_taken'; snapshotId: string; status: 'pending' | 'ready' };

/**
 * A pending snapshot of the account's running sandbox, unless the account's snapshots fill its
 * storage already: one transaction under the account's lock, so replicas count alike.
 *
 * A `final` one is of a sandbox being destroyed that ran, and begins whatever the storage: its
 * copy, counted as it streams, fails at once with its event, where no request is there to answer.
 * It is claimed on the sandbox's row as it begins (final_snapshot_id), so that a second ender (the
 * sweep, a retried job) neither copies again nor destroys the sandbox under the first one's copy;
 * a claim pending since before `staleBefore` is its ender's that died, and is taken over.
 */
export function beginSnapshot(
  em: EntityManager,
  input: { accountId: string; sandboxId: string; name?: string; expiresAt: Date; limitBytes: number; final?: { staleBefore: Date } },
): Promise<SnapshotBeginning> {
  return em.fork().transactional(async (tx) => {
    const lock = eventsLockStatement({ accountId: input.accountId });
    await execute(tx, lock.sql, lock.params);
    const [sandbox] = await execute<{ status: string; image: string; ready_at: Date | null; final_snapshot_id: string | null }>(
      tx,
      'select status, image, ready_at, final_snapshot_id from sandboxes where id = $1 and account_id = $2',
      [input.sandboxId, input.accountId],
    );
    if (!sandbox) return { outcome: 'sandbox_not_found' };
    const takeable = input.final ? sandbox.status === 'terminating' && sandbox.ready_at !== null : sandbox.status === 'running';
    if (!takeable) return { outcome: 'sandbox_not_running' };
    if (input.final && sandbox.final_snapshot_id) {
      const [claimed] = await execute<{ status: SnapshotRow['status']; fresh: boolean }>(tx, 'select status, created_at >= $2 as fresh from snapshots where id = $1', [
        sandbox.final_snapshot_id,
        input.final.staleBefore,
      ]);
      if (claimed?.status === 'ready') return { outcome: 'final_taken', snapshotId: sandbox.final_snapshot_id, status: 'ready' };
      if (claimed?.status === 'pending' && claimed.fresh) return { outcome: 'final_taken', snapshotId: sandbox.final_snapshot_id, status: 'pending' };
    }
    const [{ used }] = (await execute<{ used: string }>(tx, USED, [input.accountId])) as [{ used: string }];
    if (Number(used) >= input.limitBytes && !input.final) return { outcome: 'limit_reached', usedBytes: Number(used) };
    const [snapshot] = await execute<SnapshotRow>(
      tx,
      `insert into snapshots (id, account_id, sandbox_id, name, image, status, expires_at) values ($1, $2, $3, $4, $5, 'pending', $6) returning ${COLUMNS}`,
      [newId('snap'), input.accountId, input.sandboxId, input.name ?? null, sandbox.image, input.expiresAt],
    );
    if (input.final) await execute(tx, 'update sandboxes set final_snapshot_id = $1 where id = $2', [snapshot!.id, input.sandboxId]);
    return { outcome: 'begun', snapshot: snapshot!, usedBytes: Number(used) };
  });
}

/**
 * The pending snapshot's bytes are stored whole: ready, with its event; 'over_limit', the row left
 * pending for its failure, when with them the account's snapshots would pass its storage limit
 * (others finished meanwhile); undefined when it was deleted meanwhile.
 */
export function finishSnapshot(
  em: EntityManager,
  row: Pick<SnapshotRow, 'id' | 'account_id' | 'sandbox_id'>,
  input: { sizeBytes: number; files: number; sha256: Buffer; limitBytes: number },
): Promise<{ snapshot: SnapshotRow; event?: RecordedEvent } | 'over_limit' | undefined> {
  return em.fork().transactional(async (tx) => {
    const lock = eventsLockStatement({ accountId: row.account_id });
    await execute(tx, lock.sql, lock.params);
    const [{ used }] = (await execute<{ used: string }>(tx, USED, [row.account_id])) as [{ used: string }];
    if (Number(used) + input.sizeBytes > input.limitBytes) return 'over_limit';
    const [snapshot] = await execute<SnapshotRow>(
      tx,
      `update snapshots set status = 'ready', size_bytes = $2, files = $3, sha256 = $4 where id = $1 and status = 'pending' returning ${COLUMNS}`,
      [row.id, input.sizeBytes, input.files, input.sha256],
    );
    // Deleted while it was copied: nothing to report.
    if (!snapshot) return undefined;
    const event = await recordEventUnderLock(tx, { accountId: row.account_id, sandboxId: row.sandbox_id, type: 'snapshot.created', data: { snapshot: eventData(snapshot) } });
    return { snapshot, event };
  });
}

/**
 * The pending snapshot failed (`code`, an error code the API would answer with): its event says
 * why; none when it was no longer pending. A sandbox's final one no longer names it.
 */
export function failSnapshot(em: EntityManager, row: Pick<SnapshotRow, 'id' | 'account_id' | 'sandbox_id'>, code: string, message: string): Promise<RecordedEvent | undefined> {
  return em.fork().transactional(async (tx) => {
    const lock = eventsLockStatement({ accountId: row.account_id });
    await execute(tx, lock.sql, lock.params);
    const [failed] = await execute<{ id: string }>(tx, `update snapshots set status = 'failed', failure_code = $2 where id = $1 and status = 'pending' returning id`, [row.id, code]);
    if (!failed) return undefined;
    await execute(tx, 'update sandboxes set final_snapshot_id = null where id = $1 and final_snapshot_id = $2', [row.sandbox_id, row.id]);
    return recordEventUnderLock(tx, { accountId: row.account_id, sandboxId: row.sandbox_id, type: 'snapshot.failed', data: { snapshot: { id: row.id, sandboxId: row.sandbox_id, failureCode: code, message } } });
  });
}

/** Removes the account's snapshot, with its event; undefined when it has none of that id. */
export function deleteSnapshot(em: EntityManager, accountId: string, id: string): Promise<{ event?: RecordedEvent } | undefined> {
  return em.fork().transactional(async (tx) => {
    const lock = eventsLockStatement({ accountId });
    await execute(tx, lock.sql, lock.params);
    const [gone] = await execute<SnapshotRow>(tx, `delete from snapshots where id = $1 and account_id = $2 returning ${COLUMNS}`, [id, accountId]);
    if (!gone) return undefined;
    const event = await recordEventUnderLock(tx, { accountId, sandboxId: gone.sandbox_id, type: 'snapshot.deleted', data: { snapshot: { id, sandboxId: gone.sandbox_id } } });
    return { event };
  });
}

export async function readOwnSnapshot(em: EntityManager, accountId: string, id: string): Promise<SnapshotRow | undefined> {
  const [row] = await execute<SnapshotRow>(em.fork(), `select ${COLUMNS} from snapshots where id = $1 and account_id = $2 and expires_at > now()`, [id, accountId]);
  return row;
}

/** One page of the account's snapshots, newest first, after the snapshot `after`; undefined when `after` is not one of them. */
export async function listOwnSnapshots(em: EntityManager, accountId: string, options: { after?: string; limit: number }): Promise<{ snapshots: SnapshotRow[]; next?: string } | undefined> {
  const values: unknown[] = [accountId, options.limit + 1];
  if (options.after !== undefined) values.push(options.after);
  const rows = await execute<SnapshotRow>(
    em.fork(),
    `select ${COLUMNS} from snapshots where account_id = $1 and expires_at > now()
       ${options.after === undefined ? '' : 'and (created_at, id) < (select created_at, id from snapshots where id = $3 and account_id = $1)'}
      order by created_at desc, id desc limit $2`,
    values,
  );
  if (rows.length === 0 && options.after !== undefined && !(await readOwnSnapshot(em, accountId, options.after))) return undefined;
  const page = rows.slice(0, options.limit);
  return { snapshots: page, next: rows.length > options.limit ? page.at(-1)?.id : undefined };
}

/** Bytes of the account's ready snapshots. */
export async function usedSnapshotBytes(em: EntityManager, accountId: string): Promise<number> {
  const [row] = await execute<{ used: string }>(em.fork(), USED, [accountId]);
  return Number(row?.used ?? 0);
}

/** Snapshots past their retention (their bytes and rows to remove), oldest first. */
export function expiredSnapshots(em: EntityManager, limit: number): Promise<Pick<SnapshotRow, 'id' | 'account_id'>[]> {
  return execute<Pick<SnapshotRow, 'id' | 'account_id'>>(em.fork(), 'select id, account_id from snapshots where expires_at <= now() order by expires_at limit $1', [limit]);
}

/** Snapshots still pending though taken before `before`: their copy's process is gone. */
export function stalePendingSnapshots(em: EntityManager, before: Date, limit: number): Promise<Pick<SnapshotRow, 'id' | 'account_id' | 'sandbox_id'>[]> {
  return execute<Pick<SnapshotRow, 'id' | 'account_id' | 'sandbox_id'>>(
    em.fork(),
    `select id, account_id, sandbox_id from snapshots where status = 'pending' and created_at < $1 order by created_at limit $2`,
    [before, limit],
  );
}

function eventData(row: SnapshotRow) {
  return { id: row.id, sandboxId: row.sandbox_id, name: row.name, sizeBytes: Number(row.size_bytes), files: row.files };
}
