import type { Redis } from 'ioredis';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey } from '../../shared/db/entities.ts';
import type { Logger } from '../../shared/logger.ts';

export interface KeyIdentity {
  keyId: string;
  accountId: string;
}

const REVOKED = 'revoked';
const TOMBSTONE_SECONDS = 24 * 3600;
const TOUCH_INTERVAL_SECONDS = 60;

/**
 * API-key lookups cached in Redis, shared by every replica. Revocation writes a tombstone over
 * the cache entry after the database update, and fills use SET NX, so a fill racing a revoke can
 * never resurrect the key: a revoked key fails on every replica from the next request on.
 */
export class ApiKeyStore {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly cacheSeconds: number;
  private readonly log: Logger;

  constructor(redis: Redis, prefix: string, cacheSeconds: number, log: Logger) {
    this.redis = redis;
    this.prefix = prefix;
    this.cacheSeconds = cacheSeconds;
    this.log = log;
  }

  private cacheKey(keyHash: string): string {
    return `${this.prefix}:apikey:${keyHash}`;
  }

  async authenticate(em: EntityManager, keyHash: string): Promise<KeyIdentity | undefined> {
    // One round trip reads the cache and claims the "record lastUsedAt" slot for this minute.
    const replies = await this.redis
      .pipeline()
      .get(this.cacheKey(keyHash))
      .set(`${this.prefix}:apikey-touch:${keyHash}`, '1', 'EX', TOUCH_INTERVAL_SECONDS, 'NX')
      .exec();
    const cached = replies?.[0]?.[1] as string | null | undefined;
    const touch = replies?.[1]?.[1] === 'OK';
    if (cached === REVOKED) return undefined;
    let identity: KeyIdentity;
    if (cached) {
      identity = JSON.parse(cached) as KeyIdentity;
    } else {
      const row = await em.findOne(ApiKey, { keyHash }, { fields: ['id', 'accountId', 'revokedAt'] });
      if (!row || row.revokedAt) return undefined;
      identity = { keyId: row.id, accountId: row.accountId };
      if (this.cacheSeconds > 0) {
        await this.redis.set(this.cacheKey(keyHash), JSON.stringify(identity), 'EX', this.cacheSeconds, 'NX');
      }
    }
    if (touch) this.recordUse(em, identity.keyId);
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
