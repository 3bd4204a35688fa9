import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

// Leases on in-flight work, shared by every API replica and worker: a sorted set per subject (an
// account, a sandbox, a webhook endpoint) holding one member per piece of work in progress, scored
// by when its lease runs out. One round trip takes a lease in every set or in none; a process that
// dies mid-work leaves leases that simply expire. Redis's own clock, so replicas with skewed clocks agree.
const ACQUIRE = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local lease = ARGV[1]
local expires = now + tonumber(ARGV[2])
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) >= tonumber(ARGV[2 + i]) then
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    return {0, i, tonumber(first[2]) - now}
  end
end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, expires, lease)
  redis.call('PEXPIREAT', key, expires + 1000)
end
return {1, 0, 0}
`;

const IN_USE = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
`;

export interface LeaseRequest {
  /** Each subject's key and how many leases it may hold at once. */
  subjects: { key: string; limit: number }[];
  /** The longest the work can take; the lease expires then even if never released. */
  ttlMs: number;
}

export type LeaseResult = { granted: true; release: () => Promise<void> } | { granted: false; subjectIndex: number; retryAfterSeconds: number };

/**
 * A lease's member: this process's random tag and a count, unique over every replica and worker
 * without drawing random bytes for each lease, on the path of every exec.
 */
const PROCESS_TAG = randomBytes(9).toString('base64url');
let leasesTaken = 0;

type WithAcquire = Redis & {
  paddockAcquireLease(...args: (string | number)[]): Promise<[number, number, number]>;
  paddockLeasesInUse(key: string): Promise<number>;
};

export class InFlightLeases {
  private readonly redis: WithAcquire;
  private readonly prefix: string;

  constructor(redis: Redis, prefix: string) {
    if (!('paddockAcquireLease' in redis)) redis.defineCommand('paddockAcquireLease', { lua: ACQUIRE });
    if (!('paddockLeasesInUse' in redis)) redis.defineCommand('paddockLeasesInUse', { lua: IN_USE, numberOfKeys: 1 });
    this.redis = redis as WithAcquire;
    this.prefix = prefix;
  }

  /** Leases of the subject held now (not expired). */
  async inUse(subjectKey: string): Promise<number> {
    return this.redis.paddockLeasesInUse(`${this.prefix}:inflight:${subjectKey}`);
  }

  async acquire(request: LeaseRequest): Promise<LeaseResult> {
    const keys = request.subjects.map((s) => `${this.prefix}:inflight:${s.key}`);
    const lease = `${PROCESS_TAG}.${(leasesTaken++).toString(36)}`;
    const [granted, index] = await this.redis.paddockAcquireLease(
      keys.length,
      ...keys,
      lease,
      request.ttlMs,
      ...request.subjects.map((s) => s.limit),
    );
    // The earliest lease's expiry is only a ceiling: most work ends far sooner, so a second.
    if (granted !== 1) return { granted: false, subjectIndex: index - 1, retryAfterSeconds: 1 };
    let released = false;
    return {
      granted: true,
      release: async () => {
        if (released) return;
        released = true;
        await Promise.all(keys.map((key) => this.redis.zrem(key, lease)));
      },
    };
  }
}
