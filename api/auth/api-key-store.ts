import type { ChainableCommander, Redis } from 'ioredis';
import type { EntityManager } from '@mikro-orm/postgresql';
import { findApiKeyByHash, recordApiKeyUse, revokeApiKeyRecord } from '../../shared/repositories/api-keys.ts';
import type { Logger } from '../../shared/logger.ts';
import { effectiveScopes, type Scope } from '../../shared/scopes.ts';
import { bucketResult, TAKE_TOKEN_LUA, type BucketResult } from '../ratelimit/token-bucket.ts';
import { EmptyBuckets } from '../ratelimit/empty-buckets.ts';
import { ACQUIRE_LUA } from '../../shared/leases.ts';

export interface KeyIdentity {
  keyId: string;
  accountId: string;
  scopes: Scope[];
}

const REVOKED = 'revoked';

/**
 * An API process holding requests of keys open (api/auth/key-sessions.ts): each lookup and each
 * check of a key marks it, by Redis's clock, as a holder of that key for `ttlMs`, in the same
 * round trip, so that a revocation knows whom to wait for.
 */
export interface KeyHolder {
  id: string;
  ttlMs: number;
}

// Marks ARGV-given holder as holding the key's requests until now + ttl (Redis's clock).
const HOLD_LUA = `
local function now_ms()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
local function hold(key, holder, ttl_ms, now)
  redis.call('ZADD', key, now + ttl_ms, holder)
  redis.call('PEXPIRE', key, ttl_ms)
end
`;

// KEYS: the key's cache entry, its "lastUsedAt recorded this minute" slot, its holders. ARGV: the
// slot's seconds, the holder to mark ('' for none) and its mark's milliseconds, then (for a route
// with an account bucket) the bucket's key prefix, capacity, refill per ms and the scope the route
// needs, then (for a route with an in-flight cap) the lease's member ('' for none), its
// milliseconds, the number of its subjects, each subject's key around the account's id (before,
// after) and limit, the number of keys to read once it is granted, and each around the account's id.
// For a cached valid key only: mark the holder, claim the slot, and take the route's token
// from the account's bucket when the key has the scope (a key without it is refused before any
// token is spent), then, with the token, the lease and the reads. The bucket's and the lease's keys
// are built from the entry (its account), so they are not among KEYS: fine on one Redis, as
// Paddock runs it; a Redis Cluster would need a hash tag.
const READ_KEY_SCRIPT = `${TAKE_TOKEN_LUA}${HOLD_LUA}${ACQUIRE_LUA}
local v = redis.call('GET', KEYS[1])
if not v or v == 'revoked' then
  return {v or '', 0}
end
if ARGV[2] ~= '' then
  hold(KEYS[3], ARGV[2], tonumber(ARGV[3]), now_ms())
end
local claimed = redis.call('SET', KEYS[2], '1', 'EX', ARGV[1], 'NX') and 1 or 0
if not ARGV[4] then
  return {v, claimed}
end
local entry = cjson.decode(v)
if type(entry.scopes) ~= 'table' or type(entry.accountId) ~= 'string' then
  return {v, claimed}
end
local scoped = ARGV[7] == ''
for _, scope in ipairs(entry.scopes) do
  if scope == ARGV[7] then scoped = true end
end
if not scoped then
  return {v, claimed}
end
local token = take_token(ARGV[4] .. entry.accountId, tonumber(ARGV[5]), tonumber(ARGV[6]))
local out = {v, claimed, token[1], token[2], token[3]}
if token[1] ~= 1 or not ARGV[8] or ARGV[8] == '' then
  return out
end
local at = 10
local keys, limits = {}, {}
for i = 1, tonumber(ARGV[at]) do
  keys[i] = ARGV[at + 3 * i - 2] .. entry.accountId .. ARGV[at + 3 * i - 1]
  limits[i] = tonumber(ARGV[at + 3 * i])
end
at = at + 3 * #keys + 1
local lease = acquire_lease(keys, ARGV[8], tonumber(ARGV[9]), limits)
out[6] = lease[1]
if lease[1] == 1 then
  for j = 1, tonumber(ARGV[at]) do
    out[6 + j] = redis.call('GET', ARGV[at + 2 * j - 1] .. entry.accountId .. ARGV[at + 2 * j])
  end
end
return out
`;

// KEYS: the holders set of a key. ARGV: the holder, its mark's milliseconds.
const HOLD_SCRIPT = `${HOLD_LUA}
hold(KEYS[1], ARGV[1], tonumber(ARGV[2]), now_ms())
`;

// KEYS: for each of ARGV[3] keys checked, its cache entry and its holders; then the holders of
// keys no longer held. ARGV: the holder, its mark's milliseconds, the count checked. Answers, per
// key checked, 1 (valid: the holder is marked again), 0 (revoked: its mark goes) or -1 (not
// cached: only the database can tell).
const CHECK_KEYS_SCRIPT = `${HOLD_LUA}
local checked = tonumber(ARGV[3])
local now = now_ms()
local out = {}
for i = 1, checked do
  local v = redis.call('GET', KEYS[2 * i - 1])
  if v == 'revoked' then
    redis.call('ZREM', KEYS[2 * i], ARGV[1])
    out[i] = 0
  elseif v then
    hold(KEYS[2 * i], ARGV[1], tonumber(ARGV[2]), now)
    out[i] = 1
  else
    out[i] = -1
  end
end
for j = 2 * checked + 1, #KEYS do
  redis.call('ZREM', KEYS[j], ARGV[1])
end
return out
`;

// KEYS: a key's holders. Answers how many marks have not expired yet.
const COUNT_HOLDERS_SCRIPT = `
local t = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t[1] * 1000 + math.floor(t[2] / 1000))
return redis.call('ZCARD', KEYS[1])
`;

export type KeyCheck = 'valid' | 'revoked' | 'unknown';

/** The route's account bucket, for the lookup to take its token in the same round trip. */
export interface BucketToTake {
  keyPrefix: string;
  perMinute: number;
  /** The scope the route needs: a key without it spends no token. */
  scope?: Scope;
}

/** A key around the account's id: `before` + the id + `after`. */
export type AroundAccount = [before: string, after: string];

/** An in-flight lease for the lookup to take with the token (shared/leases.ts), and keys to read once it is. */
export interface LeaseToTake {
  member: string;
  ttlMs: number;
  subjects: { key: AroundAccount; limit: number }[];
  read: AroundAccount[];
}

/** What the lookup's lease came to: granted, with what it read; or refused (the in-flight step asks again, and says why). */
export type LeaseTaken = { granted: true; read: (string | null)[] } | { granted: false };

type WithReadKey = Redis & {
  paddockReadKey(cacheKey: string, touchKey: string, holdersKey: string, ...args: (string | number)[]): Promise<[string, number, ...(number | string | null)[]]>;
  paddockHoldKey(holdersKey: string, holder: string, ttlMs: number): Promise<unknown>;
  paddockCheckKeys(keyCount: number, ...args: (string | number)[]): Promise<number[]>;
  paddockCountHolders(holdersKey: string): Promise<number>;
};
type HoldingPipeline = ChainableCommander & { paddockHoldKey(holdersKey: string, holder: string, ttlMs: number): HoldingPipeline };
const TOMBSTONE_SECONDS = 24 * 3600;
const TOUCH_INTERVAL_SECONDS = 60;

/**
 * API-key lookups cached in Redis, shared by every replica. Revocation writes a tombstone over
 * the cache entry after the database update, and fills use SET NX, so a fill racing a revoke can
 * never resurrect the key: a revoked key fails on every replica from the next request on.
 */
export class ApiKeyStore {
  private readonly redis: WithReadKey;
  private readonly prefix: string;
  private readonly cacheSeconds: number;
  private readonly log: Logger;
  /**
   * Keys refused for their route's bucket, until its next token: a refusal inside that window is
   * answered without Redis. A key revoked meanwhile on another replica is refused (429) rather
   * than rejected (401) until then (one refill interval: 0.5 to 3 s at the defaults): nothing runs either way.
   */
  private readonly empty = new EmptyBuckets<KeyIdentity>();

  constructor(redis: Redis, prefix: string, cacheSeconds: number, log: Logger) {
    if (!('paddockReadKey' in redis)) {
      redis.defineCommand('paddockReadKey', { numberOfKeys: 3, lua: READ_KEY_SCRIPT });
      redis.defineCommand('paddockHoldKey', { numberOfKeys: 1, lua: HOLD_SCRIPT });
      redis.defineCommand('paddockCheckKeys', { lua: CHECK_KEYS_SCRIPT });
      redis.defineCommand('paddockCountHolders', { numberOfKeys: 1, lua: COUNT_HOLDERS_SCRIPT });
    }
    this.redis = redis as WithReadKey;
    this.prefix = prefix;
    this.cacheSeconds = cacheSeconds;
    this.log = log;
  }

  private cacheKey(keyHash: string): string {
    return `${this.prefix}:apikey:${keyHash}`;
  }

  private holdersKey(keyHash: string): string {
    return `${this.prefix}:apikey-holders:${keyHash}`;
  }

  /**
   * `unitOfWork` is asked for only when the database is reached (a cache miss, or this minute's
   * lastUsedAt): a request served from the cache forks no unit of work. `checked`: the key was
   * found valid in Redis or the database (not answered from memory), and `holder`, when given, is
   * marked its holder, in the same round trip.
   */
  async authenticate(
    unitOfWork: () => EntityManager,
    keyHash: string,
    bucket?: BucketToTake,
    holder?: KeyHolder,
    lease?: LeaseToTake,
  ): Promise<(KeyIdentity & { token?: BucketResult; checked?: boolean; lease?: LeaseTaken }) | undefined> {
    const emptyKey = bucket && `${keyHash}\n${bucket.keyPrefix}`;
    const known = emptyKey ? this.empty.get(emptyKey) : undefined;
    if (bucket && known) return { ...known.value, token: bucketResult(bucket.perMinute, [0, 0, known.retryMs]) };
    const touchKey = `${this.prefix}:apikey-touch:${keyHash}`;
    // One round trip reads the cache and, for a cached valid key only, marks the holder, claims
    // this minute's "record lastUsedAt" slot and takes the route's token: an unknown key leaves
    // nothing behind.
    const bucketArgs = bucket ? [bucket.keyPrefix, bucket.perMinute, bucket.perMinute / 60_000, bucket.scope ?? ''] : [];
    const leaseArgs =
      bucket && lease
        ? [lease.member, lease.ttlMs, lease.subjects.length, ...lease.subjects.flatMap((s) => [...s.key, s.limit]), lease.read.length, ...lease.read.flat()]
        : [];
    const askedAt = performance.now();
    const [cached, claimed, ...taken] = await this.redis.paddockReadKey(
      this.cacheKey(keyHash),
      touchKey,
      this.holdersKey(keyHash),
      TOUCH_INTERVAL_SECONDS,
      holder?.id ?? '',
      holder?.ttlMs ?? 0,
      ...bucketArgs,
      ...leaseArgs,
    );
    if (cached === REVOKED) return undefined;
    let identity: KeyIdentity & { token?: BucketResult; checked?: boolean; lease?: LeaseTaken };
    let touch = claimed === 1;
    if (cached) {
      const entry = JSON.parse(cached) as Omit<KeyIdentity, 'scopes'> & { scopes?: string[] | null };
      identity = { ...entry, scopes: effectiveScopes(entry.scopes), checked: true };
      if (bucket && taken.length >= 3) {
        const [allowed, remaining, retryMs, granted, ...read] = taken as [number, number, number, number?, ...(string | null)[]];
        identity.token = bucketResult(bucket.perMinute, [allowed, remaining, retryMs]);
        if (!identity.token.allowed && emptyKey) this.empty.remember(emptyKey, identity, askedAt, retryMs);
        if (lease && granted !== undefined) identity.lease = granted === 1 ? { granted: true, read: lease.read.map((_, i) => read[i] ?? null) } : { granted: false };
      }
    } else {
      const row = await findApiKeyByHash(unitOfWork(), keyHash);
      if (!row || row.revokedAt) return undefined;
      identity = { keyId: row.id, accountId: row.accountId, scopes: effectiveScopes(row.scopes), checked: true };
      const fill = this.redis.pipeline() as HoldingPipeline;
      if (this.cacheSeconds > 0) fill.set(this.cacheKey(keyHash), JSON.stringify(identity), 'EX', this.cacheSeconds, 'NX');
      fill.set(touchKey, '1', 'EX', TOUCH_INTERVAL_SECONDS, 'NX');
      // The holder's mark, then the entry read again: a revocation that wrote its tombstone after
      // the database said valid either finds the mark (and waits) or is found here.
      if (holder) fill.paddockHoldKey(this.holdersKey(keyHash), holder.id, holder.ttlMs).get(this.cacheKey(keyHash));
      const replies = (await fill.exec()) ?? [];
      if (holder) {
        if (replies.at(-1)?.[1] === REVOKED) return undefined;
        identity.checked = replies.at(-2)?.[0] == null && replies.at(-1)?.[0] == null;
        replies.splice(-2);
      }
      touch = replies.at(-1)?.[1] === 'OK';
    }
    if (touch) this.recordUse(unitOfWork(), identity.keyId);
    return identity;
  }

  /** Records lastUsedAt at most once a minute per key, off the request's critical path. */
  private recordUse(em: EntityManager, keyId: string): void {
    recordApiKeyUse(em, keyId).catch((err: unknown) => this.log.warn({ err, keyId }, 'could not record API key use'));
  }

  /** Marks the key revoked in the database, then in the shared cache; answers its hash, or undefined when there is no such key. */
  async revoke(em: EntityManager, accountId: string, keyId: string): Promise<string | undefined> {
    const keyHash = await revokeApiKeyRecord(em, accountId, keyId);
    if (!keyHash) return undefined;
    await this.redis.set(this.cacheKey(keyHash), REVOKED, 'EX', TOMBSTONE_SECONDS);
    this.empty.forget(`${keyHash}\n`);
    return keyHash;
  }

  /**
   * One round trip for a holder's open requests: each key of `held` checked in the cache (and the
   * holder marked again where valid), and the holder's mark taken off each key of `dropped`.
   */
  async check(held: readonly string[], dropped: readonly string[], holder: KeyHolder): Promise<KeyCheck[]> {
    const keys = [...held.flatMap((h) => [this.cacheKey(h), this.holdersKey(h)]), ...dropped.map((h) => this.holdersKey(h))];
    const out = await this.redis.paddockCheckKeys(keys.length, ...keys, holder.id, holder.ttlMs, held.length);
    return out.map((n) => (n === 1 ? 'valid' : n === 0 ? 'revoked' : 'unknown'));
  }

  /** Takes the holder's mark off the key (its last request of the key is over). */
  async unhold(keyHash: string, holder: KeyHolder): Promise<void> {
    await this.redis.paddockCheckKeys(1, this.holdersKey(keyHash), holder.id, holder.ttlMs, 0);
  }

  /** How many holders' marks on the key have not expired. */
  holders(keyHash: string): Promise<number> {
    return this.redis.paddockCountHolders(this.holdersKey(keyHash));
  }
}
