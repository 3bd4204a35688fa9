import type { Redis } from 'ioredis';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey } from '../../shared/db/entities.ts';
import type { Logger } from '../../shared/logger.ts';
import { effectiveScopes, type Scope } from '../../shared/scopes.ts';

export interface KeyIdentity {
  keyId: string;
  accountId: string;
  scopes: Scope[];
}

const REVOKED = 'revoked';

const READ_KEY_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if v and v ~= 'revoked' then
  local claimed = redis.call('SET', KEYS[2], '1', 'EX', ARGV[1], 'NX')
  return {v, claimed and 1 or 0}
end
return {v or '', 0}
`;

type WithReadKey = Redis & {
  paddockReadKey(cacheKey: string, touchKey: string, seconds: number): Promise<[string, number]>;
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
  async authenticate(unitOfWork: () => EntityManager, keyHash: string): Promise<KeyIdentity | undefined> {
    const touchKey = `${this.prefix}:apikey-touch:${keyHash}`;
    // One round trip reads the cache and, for a cached valid key only, claims this minute's
    // "record lastUsedAt" slot: an unknown key leaves nothing behind in Redis.
    const [cached, claimed] = await this.redis.paddockReadKey(this.cacheKey(keyHash), touchKey, TOUCH_INTERVAL_SECONDS);
    if (cached === REVOKED) return undefined;
    let identity: KeyIdentity;
    let touch = claimed === 1;
    if (cached) {
      const entry = JSON.parse(cached) as Omit<KeyIdentity, 'scopes'> & { scopes?: string[] | null };
      identity = { ...entry, scopes: effectiveScopes(entry.scopes) };
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
    return true;
  }
}
