import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { enqueueWebhookJobs } from '../jobs/webhooks.ts';
import { settleWithin } from '../settle-within.ts';
import type { RecordedEvent } from './types.ts';
import { ringMessage } from './ring.ts';
import type { ReadViews } from '../cache/read-views.ts';

const ANNOUNCE_TIMEOUT_MS = 2000;

/** The Redis channel on which every process rings the API replicas' event streams. */
export const eventsChannel = (prefix: string) => `${prefix}:events`;

/** What a commit that changed an account's sandboxes tells the rest of the system. */
export interface Announcer {
  /** The events the commit recorded; their accounts' views are stale too. */
  announce(events: readonly (RecordedEvent | undefined)[]): Promise<void>;
  /** A change that records no event (a sandbox terminating, a claim whose events come later). */
  changed(accountIds: Iterable<string>): Promise<void>;
}

/**
 * After a commit: replaces the accounts' read views' generation (cache/read-views.ts, awaited:
 * the request or job that made the change answers only once no replica serves what it was
 * before), starts the webhook fan-out of the new events (a dispatch job each, for those an
 * endpoint may receive) and rings
 * every API replica's event streams and waits of the account (Redis pub/sub, ring.ts; the streams
 * then read PostgreSQL, the record). Best effort and bounded: with Redis away the transition still stands,
 * the reaper sweep dispatches what was not, and the streams poll PostgreSQL anyway.
 */
export class EventAnnouncer implements Announcer {
  private readonly queue: Queue;
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly log: Logger;
  private readonly views: ReadViews;

  constructor(queue: Queue, redis: Redis, prefix: string, log: Logger, views: ReadViews) {
    this.queue = queue;
    this.redis = redis;
    this.prefix = prefix;
    this.log = log;
    this.views = views;
  }

  async changed(accountIds: Iterable<string>): Promise<void> {
    const ids = [...accountIds];
    if (!(await settleWithin(this.redis, () => this.views.changed(ids), ANNOUNCE_TIMEOUT_MS))) {
      this.log.warn({ accounts: ids }, 'read views not marked stale; they expire on their own (PADDOCK_READ_CACHE_SECONDS)');
    }
  }

  async announce(events: readonly (RecordedEvent | undefined)[]): Promise<void> {
    const recorded = events.filter((e): e is RecordedEvent => e !== undefined);
    if (recorded.length === 0) return;
    const accounts = [...new Set(recorded.map((e) => e.accountId))];
    const work = () =>
      Promise.all([
        // Sent first on the connection: whoever the ring wakes reads no stale view.
        this.views.changed(accounts),
        // The ring before the jobs: a create or destroy waiting on it answers sooner, behind no job's scripts.
        ...accounts.map((a) => this.redis.publish(eventsChannel(this.prefix), ringMessage(a, recorded))),
        // Only the events an endpoint may receive: for an account without one, no job at all.
        enqueueWebhookJobs(this.queue, 'dispatch', recorded.filter((e) => !e.dispatched).map((e) => ({ eventId: e.id }))),
      ]);
    if (!(await settleWithin(this.redis, work, ANNOUNCE_TIMEOUT_MS))) {
      this.log.warn({ events: recorded.map((e) => e.id) }, 'event announcement failed; the sweep will dispatch');
    }
  }
}
