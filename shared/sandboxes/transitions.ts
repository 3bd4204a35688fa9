import type { EntityManager } from '@mikro-orm/postgresql';
import { Sandbox, type DestroyReason } from '../db/entities.ts';
import type { Announcer } from '../events/announce.ts';
import { eventsLockStatement, eventsStatement, recordedFrom, recordEvent, type NewEvent } from '../events/record.ts';
import { inBatchedTransaction } from '../db/batch.ts';
import { ADD_DESTROYED_TO_ROLLUP } from '../usage/billing.ts';
import type { RecordedEvent } from '../events/types.ts';
import { SANDBOX_COLUMNS, sandboxSnapshot, type SandboxRow } from './snapshot.ts';

// Every change of a sandbox's state is a conditional update: it applies only from the state it
// expects, so two processes racing (a worker finishing a create while a user destroys, two
// reapers) can never move a sandbox backwards or destroy it twice. The events a change causes are
// recorded in the same transaction (shared/events/record.ts): an event exists exactly when its
// change does. `announcer` starts their delivery after the commit.

/** What a pending sandbox's create knows of its row: enough to tell what sandbox.running reports. */
export type PendingSandbox = Pick<SandboxRow, 'id' | 'account_id' | 'image' | 'metadata' | 'created_at' | 'expires_at'>;

/**
 * pending → running. False when the sandbox was meanwhile destroyed or is being destroyed. One
 * round trip: the update, its account's lock (the event's order, see recordEvent), and the event,
 * inserted only where the update applied (its `ready_at` is this call's own), with the commit.
 */
export async function markRunning(em: EntityManager, sandbox: PendingSandbox, announcer?: Announcer): Promise<boolean> {
  const readyAt = new Date();
  const row: SandboxRow = { ...sandbox, state: 'active', status: 'running', ready_at: readyAt, destroyed_at: null, destroy_reason: null, failure_message: null };
  const ours = { sql: `select 1 from sandboxes where id = ? and status = 'running' and ready_at = ?`, params: [sandbox.id, readyAt] };
  const { statement, ids } = eventsStatement([sandboxEventOf(row, 'sandbox.running')], undefined, ours);
  const [updated, , rows] = await inBatchedTransaction(em, (tx) =>
    tx.commitWith([
      { sql: `update sandboxes set status = 'running', ready_at = ? where id = ? and state = 'active' and status = 'pending' returning id`, params: [readyAt, sandbox.id] },
      eventsLockStatement({ accountId: sandbox.account_id }),
      statement,
    ]),
  );
  if (!updated?.length) return false;
  await announcer?.announce(recordedFrom(ids, rows));
  return true;
}

/** Asks for destruction: status terminating, the first reason given wins. False if already destroyed. */
export async function markTerminating(em: EntityManager, id: string, reason: DestroyReason, announcer: Announcer): Promise<boolean> {
  const [updated] = await em.execute<{ account_id: string }[]>(
    `update sandboxes set status = 'terminating', destroy_reason = ? where id = ? and state = 'active' and status <> 'terminating' returning account_id`,
    [reason, id],
  );
  if (updated) {
    await announcer.changed([updated.account_id]);
    return true;
  }
  const row = await em.findOne(Sandbox, { id }, { fields: ['state'], disableIdentityMap: true });
  return row?.state === 'active';
}

/**
 * active → destroyed; a sandbox destroyed for `failed` ends with status failed (events
 * sandbox.failed, then sandbox.destroyed), else terminated (sandbox.destroyed).
 */
export async function markDestroyed(
  em: EntityManager,
  id: string,
  reason: DestroyReason,
  failureMessage?: string,
  announcer?: Announcer,
): Promise<boolean> {
  const events = await em.transactional(async (tx) => {
    const [row] = await tx.execute<SandboxRow[]>(
      `update sandboxes
          set state = 'destroyed',
              status = case when coalesce(destroy_reason, ?) = 'failed' then 'failed' else 'terminated' end,
              destroyed_at = ?,
              destroy_reason = coalesce(destroy_reason, ?),
              failure_message = coalesce(?, failure_message)
        where id = ? and state = 'active'
        returning ${SANDBOX_COLUMNS}`,
      [reason, new Date(), reason, failureMessage ? failureMessage.slice(0, 1000) : null, id],
    );
    // A sandbox's own secrets go with it.
    await tx.execute('delete from secrets where sandbox_id = ?', [id]);
    if (!row) return undefined;
    // Its time moves from "running" to its months' rollups in the same commit: usage never
    // counts it twice, nor drops it.
    await tx.execute(ADD_DESTROYED_TO_ROLLUP, [id]);
    const recorded: (RecordedEvent | undefined)[] = [];
    if (row.status === 'failed') recorded.push(await sandboxEvent(tx, row, 'sandbox.failed'));
    recorded.push(await sandboxEvent(tx, row, 'sandbox.destroyed'));
    return recorded;
  });
  if (!events) return false;
  await announcer?.announce(events);
  return true;
}

/**
 * Records sandbox.expiring once for an active sandbox whose cap is near (the delayed job, or the
 * sweep when that job was lost). False when already warned, destroyed or past its cap.
 */
export async function markExpiring(em: EntityManager, id: string, announcer?: Announcer): Promise<boolean> {
  const events = await em.transactional(async (tx) => {
    const [row] = await tx.execute<SandboxRow[]>(
      `update sandboxes set expiry_warned_at = now()
        where id = ? and state = 'active' and expiry_warned_at is null and expires_at > now()
        returning ${SANDBOX_COLUMNS}`,
      [id],
    );
    if (!row) return undefined;
    return [await sandboxEvent(tx, row, 'sandbox.expiring')];
  });
  if (!events) return false;
  await announcer?.announce(events);
  return true;
}

type SandboxEventType = 'sandbox.running' | 'sandbox.failed' | 'sandbox.destroyed' | 'sandbox.expiring' | 'sandbox.created';

export function sandboxEvent(tx: EntityManager, row: SandboxRow, type: SandboxEventType) {
  return recordEvent(tx, sandboxEventOf(row, type));
}

function sandboxEventOf(row: SandboxRow, type: SandboxEventType): NewEvent {
  return {
    accountId: row.account_id,
    sandboxId: row.id,
    type,
    data: { sandbox: sandboxSnapshot(row) },
    dedupeKey: `${type}:${row.id}`,
  };
}
