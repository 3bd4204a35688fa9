import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

// Leases on in-flight work, shared by every API replica and worker: a sorted set per subject (an
// account, a sandbox, a webhook endpoint) holding one member per piece of work in progress, scored
// by when its lease runs out. One round trip takes a lease in every set or in none; a process that
// dies mid-work leaves leases that simply expire. Redis's own clock, so replicas with skewed clocks agree.
/**
 * Lua: acquire_lease(keys, lease, ttl_ms, limits): a lease in every set of `keys` (each holding
 * fewer than its limit) or in none: {1, 0, 0}, or {0, the index of the first full set, ms until
 * its earliest lease runs out}. Also run by the API-key lookup's script, which takes an exec's
 * lease in its own round trip (api/auth/api-key-store.ts).
 */
export const ACQUIRE_LUA = `
local function acquire_lease(keys, lease, ttl_ms, limits)
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local expires = now + ttl_ms
  for i, key in ipairs(keys) do
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    if redis.call('ZCARD', key) >= limits[i] then
      local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      return {0, i, tonumber(first[2]) - now}
    end
  end
  for _, key in ipairs(keys) do
    redis.call('ZADD', key, expires, lease)
    redis.call('PEXPIREAT', key, expires + 1000)
  end
  return {1, 0, 0}
end
`;

// KEYS: the subjects' sets, then keys to read once the lease is granted. ARGV: the lease, its
// milliseconds, the number of subjects, then each subject's limit.
const ACQUIRE = `${ACQUIRE_LUA}
local subjects = tonumber(ARGV[3])
local keys, limits = {}, {}
for i = 1, subjects do
  keys[i] = KEYS[i]
  limits[i] = tonumber(ARGV[3 + i])
end
local out = acquire_lease(keys, ARGV[1], tonumber(ARGV[2]), limits)
if out[1] == 1 then
  for j = subjects + 1, #KEYS do
    out[#out + 1] = redis.call('GET', KEYS[j])
  end
end
return out
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
  /** Keys (under no prefix) read in the same round trip once the lease is granted: what the work reads first. */
  read?: string[];
}

export type LeaseResult =
  | { granted: true; release: () => Promise<void>; /** The values of `read`, in order, null for none. */ read: (string | null)[] }
  | { granted: false; subjectIndex: number; retryAfterSeconds: number };

/**
 * A lease's member: this process's random tag and a count, unique over every replica and worker
 * without drawing random bytes for each lease, on the path of every exec.
 */
const PROCESS_TAG = randomBytes(9).toString('base64url');
let leasesTaken = 0;

type WithAcquire = Redis & {
  paddockAcquireLease(...args: (string | number)[]): Promise<[number, number, number, ...(string | null)[]]>;
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
    return this.redis.paddockLeasesInUse(this.subjectKey(subjectKey));
  }

  /** Where a subject's leases are. */
  subjectKey(subject: string): string {
    return `${this.prefix}:inflight:${subject}`;
  }

  /** A new lease's member. */
  member(): string {
    return `${PROCESS_TAG}.${(leasesTaken++).toString(36)}`;
  }

  /** The release of `lease`, taken in the sets `keys` (by this class or a script running ACQUIRE_LUA). */
  held(keys: string[], lease: string): () => Promise<void> {
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      await Promise.all(keys.map((key) => this.redis.zrem(key, lease)));
    };
  }

  async acquire(request: LeaseRequest): Promise<LeaseResult> {
    const keys = request.subjects.map((s) => this.subjectKey(s.key));
    const lease = this.member();
    const read = request.read ?? [];
    const [granted, index, , ...values] = await this.redis.paddockAcquireLease(
      keys.length + read.length,
      ...keys,
      ...read,
      lease,
      request.ttlMs,
      keys.length,
      ...request.subjects.map((s) => s.limit),
    );
    // The earliest lease's expiry is only a ceiling: most work ends far sooner, so a second.
    if (granted !== 1) return { granted: false, subjectIndex: index - 1, retryAfterSeconds: 1 };
    return { granted: true, read: read.map((_, i) => values[i] ?? null), release: this.held(keys, lease) };
  }
}
