import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { enqueueWebhookJobs } from '../jobs/webhooks.ts';
import { settleWithin } from '../settle-within.ts';
import type { RecordedEvent } from './types.ts';
import { ringMessage } from './ring.ts';

const ANNOUNCE_TIMEOUT_MS = 2000;

/** The Redis channel on which every process rings the API replicas' event streams. */
export const eventsChannel = (prefix: string) => `${prefix}:events`;

/**
 * After a commit: starts the webhook fan-out of the new events (a dispatch job each) and rings
 * every API replica's event streams and waits of the account (Redis pub/sub, ring.ts; the streams
 * then read PostgreSQL, the record). Best effort and bounded: with Redis away the transition still stands,
 * the reaper sweep dispatches what was not, and the streams poll PostgreSQL anyway.
 */
export class EventAnnouncer {
  private readonly queue: Queue;
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly log: Logger;

  constructor(queue: Queue, redis: Redis, prefix: string, log: Logger) {
    this.queue = queue;
    this.redis = redis;
    this.prefix = prefix;
    this.log = log;
  }

  async announce(events: readonly (RecordedEvent | undefined)[]): Promise<void> {
    const recorded = events.filter((e): e is RecordedEvent => e !== undefined);
    if (recorded.length === 0) return;
    const work = () =>
      Promise.all([
        // The ring first: a create or destroy waiting on it answers sooner, behind no job's scripts.
        ...[...new Set(recorded.map((e) => e.accountId))].map((a) => this.redis.publish(eventsChannel(this.prefix), ringMessage(a, recorded))),
        enqueueWebhookJobs(this.queue, 'dispatch', recorded.map((e) => ({ eventId: e.id }))),
      ]);
    if (!(await settleWithin(this.redis, work, ANNOUNCE_TIMEOUT_MS))) {
      this.log.warn({ events: recorded.map((e) => e.id) }, 'event announcement failed; the sweep will dispatch');
    }
  }
}
