import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../ids.ts';
import type { Rows, Statement } from '../db/batch.ts';
import type { EventType, RecordedEvent } from './types.ts';

// The outbox. recordEvent is called inside the transaction that makes the change the event
// reports, so the event exists exactly when the change does: a rolled-back transition leaves no
// event, and a committed one always has its event. Delivery (webhooks, streams) starts from the
// committed row: announce() right after the commit, and the reaper sweep for any announcement lost.

export interface NewEvent {
  accountId: string;
  type: EventType;
  sandboxId?: string | null;
  data: Record<string, unknown>;
  /** Makes the event once-only per account (usage thresholds, expiry warnings). */
  dedupeKey?: string;
  /** Delivered to this endpoint only (webhook.test). */
  targetEndpointId?: string;
}

interface EventRow {
  seq: string;
  id: string;
  account_id: string;
  sandbox_id: string | null;
  type: EventType;
  data: Record<string, unknown>;
  created_at: Date;
  dispatched_at: Date | null;
}

/**
 * Inserts the event in `tx`'s transaction. An account's events are inserted under a lock of the
 * account's row, held to the commit: their seq order is their commit order, so a reader listing
 * `seq > N` never skips one that commits later with a smaller seq. The row lock (not an advisory
 * lock) because a create already holds that row FOR UPDATE: a second lock of another kind, taken
 * in another order by a worker's transition (whose event's foreign key needs the row too), would
 * deadlock with it. FOR NO KEY UPDATE does not block those foreign-key checks. Answers undefined
 * when the dedupe key was already used.
 */
export async function recordEvent(tx: EntityManager, event: NewEvent): Promise<RecordedEvent | undefined> {
  const lock = eventsLockStatement({ accountId: event.accountId });
  await tx.execute(lock.sql, lock.params as unknown[]);
  const { statement, ids } = eventsStatement([event]);
  return recordedFrom(ids, await tx.execute<Rows>(statement.sql, statement.params as unknown[]))[0];
}

/** The lock an account's events are inserted under (see recordEvent): the account's, or the account's of the sandbox. */
export function eventsLockStatement(of: { accountId: string } | { sandboxId: string }): Statement {
  return 'accountId' in of
    ? { sql: 'select 1 from accounts where id = ? for no key update', params: [of.accountId] }
    : { sql: 'select 1 from accounts where id = (select account_id from sandboxes where id = ?) for no key update', params: [of.sandboxId] };
}

// The dispatched_at of a new event `v`: now, where no endpoint of its account could receive it.
const NOWHERE_TO_SEND = `case when v.target_endpoint_id is null and not exists (
       select 1 from webhook_endpoints w where w.account_id = v.account_id and w.disabled_at is null) then now() end`;

/**
 * Events of one account as one statement (their seq in the order given), for a transaction that
 * holds their account's row locked already (FOR UPDATE or FOR NO KEY UPDATE, see recordEvent) and
 * sends it itself; `recordedFrom` reads its rows. `along`: the change the events report, written by
 * the same statement (its foreign keys are checked at the statement's end, so an event may name the
 * row it inserts). `when`: a query; the events are inserted only if it has a row (a change sent
 * ahead in the same batch, whose outcome the statement cannot wait for).
 */
export function eventsStatement(events: readonly NewEvent[], along?: Statement, when?: Statement): { statement: Statement; ids: string[] } {
  const accountId = events[0]?.accountId;
  if (events.some((e) => e.accountId !== accountId)) throw new Error('eventsStatement takes the events of one account');
  const ids = events.map(() => newId('evt'));
  const values = `values ${events.map(() => '(?, ?, ?, ?, ?::jsonb, ?, ?)').join(', ')}`;
  // An event no endpoint can receive is recorded dispatched, and gets no dispatch job (announce).
  // Exact, not a guess: this statement runs under the account's row lock, which an endpoint's
  // creation takes too and dates itself after (createWebhook), so an endpoint this statement does
  // not see is younger than the event, and the dispatch would leave it out (webhook-dispatch.ts).
  const sql = `${along ? `with along as (${along.sql}) ` : ''}insert into events (id, account_id, sandbox_id, type, data, dedupe_key, target_endpoint_id, dispatched_at)
     select v.*, ${NOWHERE_TO_SEND} from (${values}) as v (id, account_id, sandbox_id, type, data, dedupe_key, target_endpoint_id)
     ${when ? `where exists (${when.sql})` : ''}
     on conflict do nothing
     returning seq, id, account_id, sandbox_id, type, data, created_at, dispatched_at`;
  const params = [...(along?.params ?? []), ...events.flatMap((event, i) => [
    ids[i],
    event.accountId,
    event.sandboxId ?? null,
    event.type,
    JSON.stringify(event.data),
    event.dedupeKey ?? null,
    event.targetEndpointId ?? null,
  ]), ...(when?.params ?? [])];
  return { statement: { sql, params }, ids };
}

/** Each event of `ids` as recorded from the rows `eventsStatement` returned, or undefined where its dedupe key was already used. */
export function recordedFrom(ids: readonly string[], rows: Rows = []): (RecordedEvent | undefined)[] {
  const byId = new Map((rows as unknown as EventRow[]).map((row) => [row.id, row]));
  return ids.map((id) => {
    const row = byId.get(id);
    return row ? toRecorded(row) : undefined;
  });
}

function toRecorded(row: EventRow): RecordedEvent {
  return {
    seq: String(row.seq),
    id: row.id,
    accountId: row.account_id,
    sandboxId: row.sandbox_id,
    type: row.type,
    createdAt: new Date(row.created_at),
    data: row.data,
    dispatched: row.dispatched_at !== null,
  };
}

