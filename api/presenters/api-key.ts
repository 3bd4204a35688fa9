import type { ApiKey } from '../../shared/db/entities.ts';
import { effectiveScopes } from '../../shared/scopes.ts';

export function presentApiKey(key: ApiKey) {
  return {
    id: key.id,
    name: key.name,
    scopes: effectiveScopes(key.scopes),
    start: key.start,
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  };
}

/** The one response that ever carries the raw key. */
export function presentCreatedApiKey(key: ApiKey, rawKey: string) {
  return { id: key.id, name: key.name, key: rawKey, scopes: effectiveScopes(key.scopes), start: key.start, createdAt: key.createdAt.toISOString() };
}
