import type { Redis } from 'ioredis';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey } from '../../shared/db/entities.ts';
import type { Logger } from '../../shared/logger.ts';
import { effectiveScopes, type Scope } from '../../shared/scopes.ts';
import { bucketResult, TAKE_TOKEN_LUA, type BucketResult } from '../ratelimit/token-bucket.ts';
import { EmptyBuckets } from '../ratelimit/empty-buckets.ts';

export interface KeyIdentity {
  keyId: string;
  accountId: string;
  scopes: Scope[];
}

const REVOKED = 'revoked';

// KEYS: the key's cache entry, its "lastUsedAt recorded this minute" slot. ARGV: the slot's
// seconds, then (for a route with an account bucket) the bucket's key prefix, capacity, refill per
// ms and the scope the route needs. For a cached valid key only: claim the slot, and take the
// route's token from the account's bucket when the key has the scope (a key without it is refused
// before any token is spent). The bucket's key is built from the entry (its account), so it is not
// among KEYS: fine on one Redis, as Paddock runs it; a Redis Cluster would need a hash tag.
const READ_KEY_SCRIPT = `${TAKE_TOKEN_LUA}
local v = redis.call('GET', KEYS[1])
if not v or v == 'revoked' then
  return {v or '', 0}
end
local claimed = redis.call('SET', KEYS[2], '1', 'EX', ARGV[1], 'NX') and 1 or 0
if not ARGV[2] then
  return {v, claimed}
end
local entry = cjson.decode(v)
if type(entry.scopes) ~= 'table' or type(entry.accountId) ~= 'string' then
  return {v, claimed}
end
local scoped = ARGV[5] == ''
for _, scope in ipairs(entry.scopes) do
  if scope == ARGV[5] then scoped = true end
end
if not scoped then
  return {v, claimed}
end
local token = take_token(ARGV[2] .. entry.accountId, tonumber(ARGV[3]), tonumber(ARGV[4]))
return {v, claimed, token[1], token[2], token[3]}
`;

/** The route's account bucket, for the lookup to take its token in the same round trip. */
export interface BucketToTake {
  keyPrefix: string;
  perMinute: number;
  /** The scope the route needs: a key without it spends no token. */
  scope?: Scope;
}

type WithReadKey = Redis & {
  paddockReadKey(cacheKey: string, touchKey: string, ...args: (string | number)[]): Promise<[string, number, ...number[]]>;
};
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
    if (!('paddockReadKey' in redis)) redis.defineCommand('paddockReadKey', { numberOfKeys: 2, lua: READ_KEY_SCRIPT });
    this.redis = redis as WithReadKey;
    this.prefix = prefix;
    this.cacheSeconds = cacheSeconds;
    this.log = log;
  }

  private cacheKey(keyHash: string): string {
    return `${this.prefix}:apikey:${keyHash}`;
  }

  /**
   * `unitOfWork` is asked for only when the database is reached (a cache miss, or this minute's
   * lastUsedAt): a request served from the cache forks no unit of work.
   */
  async authenticate(
    unitOfWork: () => EntityManager,
    keyHash: string,
    bucket?: BucketToTake,
  ): Promise<(KeyIdentity & { token?: BucketResult }) | undefined> {
    const emptyKey = bucket && `${keyHash}\n${bucket.keyPrefix}`;
    const known = emptyKey ? this.empty.get(emptyKey) : undefined;
    if (bucket && known) return { ...known.value, token: bucketResult(bucket.perMinute, [0, 0, known.retryMs]) };
    const touchKey = `${this.prefix}:apikey-touch:${keyHash}`;
    // One round trip reads the cache and, for a cached valid key only, claims this minute's
    // "record lastUsedAt" slot and takes the route's token: an unknown key leaves nothing behind.
    const bucketArgs = bucket ? [bucket.keyPrefix, bucket.perMinute, bucket.perMinute / 60_000, bucket.scope ?? ''] : [];
    const askedAt = performance.now();
    const [cached, claimed, ...taken] = await this.redis.paddockReadKey(this.cacheKey(keyHash), touchKey, TOUCH_INTERVAL_SECONDS, ...bucketArgs);
    if (cached === REVOKED) return undefined;
    let identity: KeyIdentity & { token?: BucketResult };
    let touch = claimed === 1;
    if (cached) {
      const entry = JSON.parse(cached) as Omit<KeyIdentity, 'scopes'> & { scopes?: string[] | null };
      identity = { ...entry, scopes: effectiveScopes(entry.scopes) };
      if (bucket && taken.length === 3) {
        identity.token = bucketResult(bucket.perMinute, taken);
        if (!identity.token.allowed && emptyKey) this.empty.remember(emptyKey, identity, askedAt, taken[2]!);
      }
    } else {
      const row = await unitOfWork().findOne(ApiKey, { keyHash }, { fields: ['id', 'accountId', 'revokedAt', 'scopes'] });
      if (!row || row.revokedAt) return undefined;
      identity = { keyId: row.id, accountId: row.accountId, scopes: effectiveScopes(row.scopes) };
      const fill = this.redis.pipeline();
      if (this.cacheSeconds > 0) fill.set(this.cacheKey(keyHash), JSON.stringify(identity), 'EX', this.cacheSeconds, 'NX');
      fill.set(touchKey, '1', 'EX', TOUCH_INTERVAL_SECONDS, 'NX');
      const replies = await fill.exec();
      touch = replies?.at(-1)?.[1] === 'OK';
    }
    if (touch) this.recordUse(unitOfWork(), identity.keyId);
    return identity;
  }

  /** Records lastUsedAt at most once a minute per key, off the request's critical path. */
  private recordUse(em: EntityManager, keyId: string): void {
    em.fork()
      .nativeUpdate(ApiKey, { id: keyId }, { lastUsedAt: new Date() })
      .catch((err: unknown) => this.log.warn({ err, keyId }, 'could not record API key use'));
  }

  /** Marks the key revoked in the database, then in the shared cache. */
  async revoke(em: EntityManager, accountId: string, keyId: string): Promise<boolean> {
    const row = await em.findOne(ApiKey, { id: keyId, accountId });
    if (!row) return false;
    if (!row.revokedAt) {
      row.revokedAt = new Date();
      await em.flush();
    }
    await this.redis.set(this.cacheKey(row.keyHash), REVOKED, 'EX', TOMBSTONE_SECONDS);
    this.empty.forget(`${row.keyHash}\n`);
    return true;
  }
}
