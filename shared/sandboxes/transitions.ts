import type { EntityManager } from '@mikro-orm/postgresql';
import type { DestroyReason } from '../db/entities.ts';
import type { Announcer } from '../events/announce.ts';
import { eventsLockStatement, eventsStatement, recordedFrom, type NewEvent } from '../repositories/events.ts';
import { inBatchedTransaction, type Statement } from '../db/batch.ts';
import { ormPool } from '../db/orm.ts';
import { ADD_DESTROYED_TO_ROLLUP } from '../repositories/usage.ts';
import {
  destroyedStatement,
  dropOwnSecretsStatement,
  expiryWarnedStatement,
  networkRefusedStatement,
  findSandbox,
  markSandboxTerminating,
  runningSinceStatement,
  runningStatement,
} from '../repositories/sandboxes.ts';
import { presentableRow, type SandboxRow } from './snapshot.ts';
import { presentSandbox } from './present.ts';
import { dateOf } from '../db/timestamps.ts';

// Every change of a sandbox's state is a conditional update: it applies only from the state it
// expects, so two processes racing (a worker finishing a create while a user destroys, two
// reapers) can never move a sandbox backwards or destroy it twice. The events a change causes are
// recorded in the same transaction (shared/repositories/events.ts): an event exists exactly when its
// change does. `announcer` starts their delivery after the commit.

/** What a pending sandbox's create knows of its row: enough to tell what sandbox.running reports. */
export type PendingSandbox = Pick<SandboxRow, 'id' | 'account_id' | 'image' | 'metadata' | 'created_at' | 'expires_at' | 'snapshot_on_destroy' | 'network'>;

/**
 * pending → running. False when the sandbox was meanwhile destroyed or is being destroyed. One
 * round trip: the update, its account's lock (the event's order, see recordEvent), and the event,
 * inserted only where the update applied (its `ready_at` is this call's own), with the commit.
 */
export async function markRunning(em: EntityManager, sandbox: PendingSandbox, announcer?: Announcer): Promise<boolean> {
  const readyAt = new Date();
  const row: SandboxRow = { ...sandbox, state: 'active', status: 'running', ready_at: readyAt, destroyed_at: null, destroy_reason: null, failure_message: null, final_snapshot_id: null, network_refused: 0 };
  const { statement, ids } = eventsStatement([sandboxEventOf(row, 'sandbox.running')], undefined, runningSinceStatement(sandbox.id, readyAt));
  const [updated, , rows] = await inBatchedTransaction(em, (tx) =>
    tx.commitWith([runningStatement(sandbox.id, readyAt), eventsLockStatement({ accountId: sandbox.account_id }), statement]),
  );
  if (!updated?.length) return false;
  await announcer?.announce(recordedFrom(ids, rows));
  return true;
}

/**
 * Asks for destruction: status terminating, the first reason given wins. With `dueBy`, only for a
 * sandbox that expires by then. True when the sandbox is now being destroyed; false when destroyed
 * already, or, with `dueBy`, not due (its end moved later).
 */
export async function markTerminating(em: EntityManager, id: string, reason: DestroyReason, announcer: Announcer, dueBy?: Date): Promise<boolean> {
  const pool = await ormPool(em);
  const marked = await markSandboxTerminating(pool, id, reason, undefined, dueBy);
  if (marked) {
    await announcer.changed([marked.accountId]);
    return true;
  }
  const row = await findSandbox(pool, id);
  return row?.state === 'active' && row.status === 'terminating';
}

/** What a destroyed sandbox's row records of its end, beyond its reason. */
export interface DestroyedEnd {
  /** Why it failed. */
  failureMessage?: string;
  /** The snapshot of its workspace taken before it was destroyed (snapshotOnDestroy). */
  finalSnapshotId?: string;
}

/**
 * active → destroyed; a sandbox destroyed for `failed` ends with status failed (events
 * sandbox.failed, then sandbox.destroyed), else terminated (sandbox.destroyed). Two round trips:
 * the update (with its own secrets' removal, which happens whether or not it applied), then, where
 * it applied, its time added to its account's months (usage never counts it twice, nor drops it)
 * and its events, with the commit. The row as destroyed, or undefined where it was not active.
 */
export async function markDestroyed(
  em: EntityManager,
  id: string,
  reason: DestroyReason,
  end: DestroyedEnd = {},
  announcer?: Announcer,
): Promise<SandboxRow | undefined> {
  const destroyed = await inBatchedTransaction(em, async (tx) => {
    const [changed] = await tx.send([destroyedStatement(id, reason, new Date(), end.failureMessage, end.finalSnapshotId), dropOwnSecretsStatement(id)]);
    const row = changed?.[0] as SandboxRow | undefined;
    if (!row) return undefined;
    const types: SandboxEventType[] = row.status === 'failed' ? ['sandbox.failed', 'sandbox.destroyed'] : ['sandbox.destroyed'];
    const { statement, ids } = eventsStatement(types.map((type) => sandboxEventOf(row, type)));
    const [, , rows] = await tx.commitWith([{ sql: ADD_DESTROYED_TO_ROLLUP, params: [id] }, eventsLockStatement({ accountId: row.account_id }), statement]);
    return { row, events: recordedFrom(ids, rows) };
  });
  if (!destroyed) return undefined;
  await announcer?.announce(destroyed.events);
  return destroyed.row;
}

/**
 * Records sandbox.expiring once for an active sandbox whose cap is near (the delayed job, or the
 * sweep when that job was lost). False when already warned, destroyed or past its cap. Two round
 * trips: the update, then the event where it applied, with the commit.
 */
export function markExpiring(em: EntityManager, id: string, announcer?: Announcer): Promise<boolean> {
  return markWithEvent(em, expiryWarnedStatement(id), 'sandbox.expiring', announcer);
}

/**
 * Records what the sandbox's egress filter refused, with a network.refused event, where it grew
 * and none was recorded in the last minute. False where nothing was recorded.
 */
export function markNetworkRefused(em: EntityManager, id: string, refused: number, announcer?: Announcer): Promise<boolean> {
  return markWithEvent(em, networkRefusedStatement(id, refused), 'network.refused', announcer);
}

/** A conditional update that answers the row where it applied, then its event, with the commit: false where it did not apply. */
async function markWithEvent(em: EntityManager, update: Statement, type: SandboxEventType, announcer?: Announcer): Promise<boolean> {
  const events = await inBatchedTransaction(em, async (tx) => {
    const [changed] = await tx.send([update]);
    const row = changed?.[0] as SandboxRow | undefined;
    if (!row) return undefined;
    const { statement, ids } = eventsStatement([sandboxEventOf(row, type)]);
    const [, rows] = await tx.commitWith([eventsLockStatement({ accountId: row.account_id }), statement]);
    return recordedFrom(ids, rows);
  });
  if (!events) return false;
  await announcer?.announce(events);
  return true;
}

type SandboxEventType = 'sandbox.running' | 'sandbox.failed' | 'sandbox.destroyed' | 'sandbox.expiring' | 'sandbox.created' | 'network.refused';

function sandboxEventOf(row: SandboxRow, type: SandboxEventType): NewEvent {
  return {
    accountId: row.account_id,
    sandboxId: row.id,
    type,
    data: { sandbox: presentSandbox(presentableRow(row)) },
    // A warning per end: one whose end moved later (its own timeout) is warned again before it.
    dedupeKey:
      type === 'sandbox.expiring'
        ? `${type}:${row.id}:${dateOf(row.expires_at).getTime()}`
        : type === 'network.refused'
          ? `${type}:${row.id}:${row.network_refused}`
          : `${type}:${row.id}`,
  };
}
