import type { Pool } from 'pg';
import { ApiError } from '../../../shared/errors.ts';
import { isId } from '../../../shared/ids.ts';
import { findSeq } from '../../../shared/repositories/events.ts';

/** The seq of one of the account's events; 404 exactly as for a missing one otherwise. */
export async function seqOf(pool: Pool, accountId: string, eventId: string): Promise<string> {
  if (!isId('evt', eventId)) throw new ApiError('event_not_found', `No event ${eventId}.`);
  const seq = await findSeq(pool, accountId, eventId);
  if (seq === undefined) throw new ApiError('event_not_found', `No event ${eventId} (unknown, or older than the retention period).`);
  return seq;
}
