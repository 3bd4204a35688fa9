import { Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';

/** A line nobody parks in or wakes from for this long is dropped (its jobs are due again long before). */
const LINE_TTL_MS = 24 * 3600_000;
/** Ids popped in one wake-up before giving up: entries of jobs that ran meanwhile are skipped. */
const WAKE_TRIES = 4;

/**
 * Jobs waiting their turn for a bounded subject's lease (shared/leases.ts: an endpoint, an
 * account), parked instead of polling. A job refused a lease goes to the delayed set, due only
 * after `fallbackMs`, and its id into the subject's line in Redis (a sorted set, oldest job
 * first); whoever releases one of the subject's leases promotes the first of the line still
 * parked, which runs at once and asks for the lease again. Parked jobs hold no worker slot and
 * cost nothing while they wait, however many there are. All of it is in Redis, for every worker
 * alike; a wake-up lost with a dead worker (or a lease that expired instead of being released)
 * only delays the job to its fallback time, when it runs and asks again.
 */
export class LeaseTurns {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly queue: Queue;

  constructor(redis: Redis, prefix: string, queue: Queue) {
    this.redis = redis;
    this.prefix = prefix;
    this.queue = queue;
  }

  /**
   * Moves the job (active, held with `token`) to the delayed set and into the subject's line. The
   * caller then throws BullMQ's DelayedError. In the line only once it is delayed, so a wake-up
   * always finds it promotable; a job already in line keeps its place (its age).
   */
  async park(job: Job, token: string | undefined, subject: string, fallbackMs: number): Promise<void> {
    await job.moveToDelayed(Date.now() + Math.round(fallbackMs), token);
    const line = this.line(subject);
    // Delayed already: out of line (Redis failing just now), it is due at its fallback time all the same.
    await this.redis
      .multi()
      .zadd(line, 'NX', job.timestamp, job.id!)
      .pexpire(line, LINE_TTL_MS)
      .exec()
      .catch(() => undefined);
  }

  /** Takes the job out of the subjects' lines: it has its lease, and waits no more. */
  async leave(subjects: string[], jobId: string): Promise<void> {
    const multi = this.redis.multi();
    for (const subject of subjects) multi.zrem(this.line(subject), jobId);
    await multi.exec();
  }

  /** Promotes the first job of the subject's line still parked; false when the line had none. */
  async wake(subject: string): Promise<boolean> {
    for (let i = 0; i < WAKE_TRIES; i++) {
      const [id] = await this.redis.zpopmin(this.line(subject));
      if (!id) return false;
      const job = await Job.fromId(this.queue, id);
      if (!job) continue;
      try {
        await job.promote();
        return true;
      } catch {
        // No longer delayed: it came due on its own and runs (or ran) already.
      }
    }
    return false;
  }

  private line(subject: string): string {
    return `${this.prefix}:turns:${subject}`;
  }
}
