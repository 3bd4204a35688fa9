import { ForeignKeyConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey } from '../db/entities.ts';

// The API key aggregate's one way to the database: an account's keys, found by their hash on
// every request that carries one (when the shared cache misses), listed, issued and revoked.

export interface NewApiKey {
  id: string;
  accountId: string;
  name: string;
  keyHash: string;
  start: string;
  createdAt: Date;
  /** null: every scope, now and later. */
  scopes: string[] | null;
}

/** The key stored; undefined when its account is gone (a dashboard token can outlive it). */
export async function insertApiKey(em: EntityManager, fields: NewApiKey): Promise<ApiKey | undefined> {
  const key = em.create(ApiKey, fields);
  try {
    await em.flush();
  } catch (err) {
    if (err instanceof ForeignKeyConstraintViolationException) return undefined;
    throw err;
  }
  return key;
}

/** The account's keys not revoked, newest first. */
export function activeApiKeys(em: EntityManager, accountId: string): Promise<ApiKey[]> {
  return em.find(ApiKey, { accountId, revokedAt: null }, { orderBy: { createdAt: 'desc', id: 'asc' } });
}

/** What a request's key is: its id, account, scopes and whether it was revoked; undefined for a hash never issued. */
export async function findApiKeyByHash(em: EntityManager, keyHash: string): Promise<Pick<ApiKey, 'id' | 'accountId' | 'revokedAt' | 'scopes'> | undefined> {
  return (await em.findOne(ApiKey, { keyHash }, { fields: ['id', 'accountId', 'revokedAt', 'scopes'] })) ?? undefined;
}

/** Records that the key was used now, in a unit of work of its own (never the request's). */
export async function recordApiKeyUse(em: EntityManager, keyId: string): Promise<void> {
  await em.fork().nativeUpdate(ApiKey, { id: keyId }, { lastUsedAt: new Date() });
}

/** Marks the account's key revoked (once: a second revocation keeps the first's time); its hash, or undefined when the account has no such key. */
export async function revokeApiKeyRecord(em: EntityManager, accountId: string, keyId: string): Promise<string | undefined> {
  const row = await em.findOne(ApiKey, { id: keyId, accountId });
  if (!row) return undefined;
  if (!row.revokedAt) {
    row.revokedAt = new Date();
    await em.flush();
  }
  return row.keyHash;
}
