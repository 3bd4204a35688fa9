import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

// Columns and constraints are owned by migrations/; these definitions only map them.

export const Account = defineEntity({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: p.string().primary(),
    email: p.string().unique(),
    passwordHash: p.string(),
    createdAt: p.datetime(),
    // Per-account overrides of the operator's quota defaults; null means "use the default".
    concurrentSandboxesLimit: p.integer().nullable(),
    monthlySandboxHoursLimit: p.float().nullable(),
  },
});
export type Account = InferEntity<typeof Account>;

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.string().primary(),
    accountId: p.string().index(),
    name: p.string(),
    keyHash: p.string().unique(),
    start: p.string(),
    createdAt: p.datetime(),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;

export const entities = [Account, ApiKey];
