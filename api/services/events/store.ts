import type { Pool } from 'pg';
import { ApiError } from '../../../shared/errors.ts';
import { isId } from '../../../shared/ids.ts';
import type { EventType } from '../../../shared/events/types.ts';

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

/** The seq of one of the account's events; 404 exactly as for a missing one otherwise. */
export async function seqOf(pool: Pool, accountId: string, eventId: string): Promise<string> {
  if (!isId('evt', eventId)) throw new ApiError('event_not_found', `No event ${eventId}.`);
  const { rows } = await pool.query<{ seq: string }>('select seq from events where id = $1 and account_id = $2', [eventId, accountId]);
  if (!rows[0]) throw new ApiError('event_not_found', `No event ${eventId} (unknown, or older than the retention period).`);
  return rows[0].seq;
}

/** Where a stream with no cursor starts: after the account's latest event. */
export async function latestSeq(pool: Pool, accountId: string): Promise<string> {
  const { rows } = await pool.query<{ seq: string | null }>('select max(seq) as seq from events where account_id = $1', [accountId]);
  return rows[0]?.seq ?? '0';
}
