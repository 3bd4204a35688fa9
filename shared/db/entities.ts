import type { NetworkPolicy } from '../network/policy.ts';
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
    /** null: every scope. */
    scopes: p.json<string[]>().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;



export type SandboxState = 'active' | 'destroyed';
export type SandboxStatus = 'pending' | 'running' | 'terminating' | 'terminated' | 'failed';
export type DestroyReason = 'user' | 'expired' | 'failed';

export const Sandbox = defineEntity({
  name: 'Sandbox',
  tableName: 'sandboxes',
  properties: {
    id: p.string().primary(),
    accountId: p.string(),
    state: p.string().$type<SandboxState>(),
    status: p.string().$type<SandboxStatus>(),
    image: p.string(),
    metadata: p.json<Record<string, string>>(),
    env: p.json<Record<string, string>>(),
    createdAt: p.datetime(),
    readyAt: p.datetime().nullable(),
    expiresAt: p.datetime(),
    destroyedAt: p.datetime().nullable(),
    destroyReason: p.string().$type<DestroyReason>().nullable(),
    failureMessage: p.string().nullable(),
    /** Its workspace is snapshotted before it is destroyed (shared/snapshots/snapshots.ts, keepFinal). */
    snapshotOnDestroy: p.boolean().default(false),
    /** That snapshot, once ready; null until then, or when it failed. */
    finalSnapshotId: p.string().nullable(),
    /** Where its programs may connect (shared/network/policy.ts). */
    network: p.json<NetworkPolicy>(),
    /** What its egress filter refused, as last recorded (network.refused). */
    networkRefused: p.integer().default(0),
    /** When sandbox.expiring is due (PADDOCK_EXPIRY_WARNING_SECONDS before expiresAt); null: none. */
    expiryWarningAt: p.datetime().nullable(),
    /** The deployment whose runtime holds it (shared/deployment.ts); null: made before deployments were recorded. */
    deployment: p.string().nullable(),
  },
});
export type Sandbox = InferEntity<typeof Sandbox>;
export const entities = [Account, ApiKey, Sandbox];
