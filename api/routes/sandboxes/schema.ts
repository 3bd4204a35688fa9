import { z } from 'zod';
import { ENV_NAME, isReservedKey } from '../../../shared/exec/env-names.ts';
import { booleanFlag, listOf, timestamp } from '../common-schemas.ts';
import { NetworkPolicy } from '../../../shared/network/policy.ts';

// The schema's own bound (a year); the session cap, which is configured, is checked by the engine.
const MAX_TIMEOUT_SECONDS = 366 * 24 * 3600;

// Stored as jsonb and handed to processes: PostgreSQL refuses NUL and unpaired surrogates in
// jsonb, and no environment variable can hold a NUL.
const storableText = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => !v.includes('\u0000') && v.isWellFormed(), { error: 'must not contain NUL bytes or unpaired surrogates' });

const stringMap = (what: string, maxEntries: number, keyPattern: RegExp, maxKey: number, maxValue: number) =>
  z
    .record(
      z.string().min(1).max(maxKey).regex(keyPattern, { error: `${what} names must match ${keyPattern.source}` }),
      storableText(maxValue),
    )
    .refine((m) => Object.keys(m).length <= maxEntries, { error: `at most ${maxEntries} ${what} entries` });

export const CreateSandboxBody = z.strictObject({
  image: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/, { error: 'must be a container image reference' })
    .optional()
    .meta({ description: "Container image; the operator's default when omitted. Ignored by the local runtime." }),
  metadata: stringMap('metadata', 32, /^[A-Za-z0-9._\-/]+$/, 64, 512).optional(),
  env: stringMap('env', 64, ENV_NAME, 128, 4096)
    .refine((m) => !Object.keys(m).some(isReservedKey), { error: 'env names must not be __proto__ or start with __PADDOCK_ (reserved)' })
    .optional()
    .meta({
      description:
        'Environment variables every exec in the sandbox starts with. While a command allowlist is in force, variables that decide which code runs (PATH, LD_*, BASH_ENV…) are refused here, as in exec.',
    }),
  timeoutSeconds: z
    .int()
    .min(1)
    .max(MAX_TIMEOUT_SECONDS)
    .optional()
    .meta({ description: 'Its own end, this many seconds after its create (expiresAt); at most the session cap, which is the default' }),
  snapshot: z
    .string()
    .max(100)
    .optional()
    .meta({ description: "A ready snapshot of the account's (snap_…): the sandbox's /workspace starts as it was, and its image is the snapshot's unless `image` names one" }),
  network: NetworkPolicy.optional().meta({
    description: "Where its programs may connect: the operator's default (PADDOCK_DEFAULT_EGRESS) when omitted; another needs the scope network:write",
  }),
  snapshotOnDestroy: z.boolean().optional().meta({
    description:
      'Snapshot its workspace when it is destroyed, by a DELETE or at its expiresAt (its processes are ended first); the destroyed sandbox\'s finalSnapshotId names the snapshot. Needs the scope snapshots:write',
  }),
});

export const SetTimeoutBody = z.strictObject({
  timeoutSeconds: z
    .int()
    .min(1)
    .max(MAX_TIMEOUT_SECONDS)
    .meta({ description: 'The sandbox ends this many seconds from now: earlier or later than before, never past createdAt + the session cap' }),
});

export const CreateSandboxQuery = z.strictObject({
  wait: booleanFlag.default(true).meta({ description: 'Answer once running or failed (default), or at once with status pending' }),
});

export const DestroySandboxQuery = z.strictObject({
  wait: booleanFlag.default(true).meta({ description: 'Answer once destroyed (default), or at once with status terminating' }),
});

export const ListSandboxesQuery = z.strictObject({
  state: z.enum(['active', 'destroyed', 'all']).default('active'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  after: z
    .string()
    .max(100)
    .optional()
    .meta({ description: "The previous page's next (a sandbox id): the sandboxes created before it. An unknown one answers 404." }),
});

export const SandboxParams = z.strictObject({ id: z.string().max(100) });

export const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, { error: 'must be 1-255 visible ASCII characters' });

export const SandboxObject = z.object({
  id: z.string(),
  state: z.enum(['active', 'destroyed']),
  status: z.enum(['pending', 'running', 'terminating', 'terminated', 'failed']),
  image: z.string(),
  createdAt: timestamp,
  readyAt: timestamp.nullable(),
  expiresAt: timestamp.meta({ description: 'createdAt + the session cap, or its own timeout; the reaper destroys the sandbox then' }),
  destroyedAt: timestamp.nullable(),
  destroyReason: z
    .enum(['user', 'expired', 'failed'])
    .nullable()
    .meta({ description: 'user: destroyed on request; expired: its expiresAt (the session cap or its own timeout); failed: never became ready' }),
  failureMessage: z.string().nullable().meta({ description: 'Why a failed sandbox failed' }),
  snapshotOnDestroy: z.boolean().meta({ description: 'Its workspace is snapshotted when it is destroyed' }),
  finalSnapshotId: z
    .string()
    .nullable()
    .meta({ description: 'The snapshot of its workspace taken as it was destroyed (snapshotOnDestroy), named as its copy begins (while the sandbox is terminating, that snapshot is pending); null until then, or when that snapshot failed (its snapshot.failed event says why)' }),
  network: NetworkPolicy,
  networkRefused: z.int().min(0).meta({
    description:
      'Packets its egress filter refused (a refused connection is one), as the workers last recorded it with a network.refused event: at most once a minute; local runtime (on Kubernetes the network plugin refuses, uncounted)',
  }),
  metadata: z.record(z.string(), z.string()),
});

export const SandboxList = listOf(SandboxObject).extend({
  next: z.string().nullable().meta({ description: 'Pass as ?after= for the next page; null on the last page' }),
});
