import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { newId } from '../ids.ts';
import type { Rows, Statement } from '../db/batch.ts';
import { execute, shifted } from '../db/placeholders.ts';
import type { EventType, RecordedEvent } from '../events/types.ts';

// The events aggregate's one way to the database: the outbox's writes, the streams' reads, and the
// sweep's and the webhook dispatch's reads and retention.
//
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
  await execute(tx, lock.sql, lock.params);
  return recordEventUnderLock(tx, event);
}

/** recordEvent in a transaction that took its account's lock first (eventsLockStatement), as a change of the account's that must come after it does. */
export async function recordEventUnderLock(tx: EntityManager, event: NewEvent): Promise<RecordedEvent | undefined> {
  const { statement, ids } = eventsStatement([event]);
  return recordedFrom(ids, await execute(tx, statement.sql, statement.params))[0];
}

/** The events, in this order, in one transaction of their own (see recordEvent). */
export function recordEvents(em: EntityManager, events: readonly NewEvent[]): Promise<(RecordedEvent | undefined)[]> {
  return em.fork().transactional(async (tx) => {
    const out: (RecordedEvent | undefined)[] = [];
    for (const event of events) out.push(await recordEvent(tx, event));
    return out;
  });
}

/** The lock an account's events are inserted under (see recordEvent): the account's, or the account's of the sandbox. */
export function eventsLockStatement(of: { accountId: string } | { sandboxId: string }): Statement {
  return 'accountId' in of
    ? { sql: 'select 1 from accounts where id = $1 for no key update', params: [of.accountId] }
    : { sql: 'select 1 from accounts where id = (select account_id from sandboxes where id = $1) for no key update', params: [of.sandboxId] };
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
  // Numbered after the change's values; the condition's after the events'.
  const first = along?.params.length ?? 0;
  const values = `values ${events
    .map((_, i) => {
      const n = (k: number) => `$${first + i * 7 + k}`;
      return `(${n(1)}, ${n(2)}, ${n(3)}, ${n(4)}, ${n(5)}::jsonb, ${n(6)}, ${n(7)})`;
    })
    .join(', ')}`;
  // An event no endpoint can receive is recorded dispatched, and gets no dispatch job (announce).
  // Exact, not a guess: this statement runs under the account's row lock, which an endpoint's
  // creation takes too and dates itself after (createWebhook), so an endpoint this statement does
  // not see is younger than the event, and the dispatch would leave it out (webhook-dispatch.ts).
  const sql = `${along ? `with along as (${along.sql}) ` : ''}insert into events (id, account_id, sandbox_id, type, data, dedupe_key, target_endpoint_id, dispatched_at)
     select v.*, ${NOWHERE_TO_SEND} from (${values}) as v (id, account_id, sandbox_id, type, data, dedupe_key, target_endpoint_id)
     ${when ? `where exists (${shifted(when.sql, first + events.length * 7)})` : ''}
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


// Reads of an account's events, for its streams and listings.

export interface StoredEvent {
  seq: string;
  id: string;
  type: EventType;
  data: Record<string, unknown>;
  created_at: Date;
}

const AFTER = {
  name: 'paddock-events-after',
  text: `select seq, id, type, data, created_at from events where account_id = $1 and seq > $2 order by seq limit $3`,
};

/** The account's events after `seq`, oldest first. */
export async function eventsAfter(pool: Pool, accountId: string, seq: string, limit: number): Promise<StoredEvent[]> {
  return (await pool.query<StoredEvent>({ ...AFTER, values: [accountId, seq, limit] })).rows;
}

/** The seq of one of the account's events; undefined when it has none of that id. */
export async function findSeq(pool: Pool, accountId: string, eventId: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ seq: string }>('select seq from events where id = $1 and account_id = $2', [eventId, accountId]);
  return rows[0]?.seq;
}

/** The account's latest seq, '0' when it has none. */
export async function latestSeq(pool: Pool, accountId: string): Promise<string> {
  const { rows } = await pool.query<{ seq: string | null }>('select max(seq) as seq from events where account_id = $1', [accountId]);
  return rows[0]?.seq ?? '0';
}

/** Events not dispatched `seconds` after their commit, oldest first. */
export async function undispatchedEventIds(em: EntityManager, seconds: number, limit: number): Promise<string[]> {
  const rows = await execute<{ id: string }>(
    em,
    `select id from events where dispatched_at is null and created_at < now() - make_interval(secs => $1) order by seq limit $2`,
    [seconds, limit],
  );
  return rows.map((r) => r.id);
}

/** Deletes, a bounded slice at a time, the events and the webhook attempts older than `days`. */
export async function deleteEventsOlderThan(em: EntityManager, days: number): Promise<void> {
  await execute(em, `delete from events where id in (select id from events where created_at < now() - make_interval(days => $1) limit 5000)`, [days]);
  await execute(
    em,
    `delete from webhook_attempts where id in (select id from webhook_attempts where created_at < now() - make_interval(days => $1) limit 5000)`,
    [days],
  );
}
