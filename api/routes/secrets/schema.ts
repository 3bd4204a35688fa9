import { z } from 'zod';
import { listOf, timestamp } from '../common-schemas.ts';
import { ENV_NAME, isReservedKey } from '../../../shared/exec/env-names.ts';
import { isProtectedVariable } from '../../../shared/allowlist/index.ts';
import { MASK_MIN_BYTES } from '../../../shared/exec/masker.ts';

export const SecretName = z
  .string()
  .min(1)
  .max(128)
  .regex(ENV_NAME, { error: 'must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)' })
  .refine((n) => !isProtectedVariable(n), { error: 'is reserved: it can change which program or code runs' })
  .refine((n) => !isReservedKey(n), { error: 'must not be __proto__ or start with __PADDOCK_ (reserved)' });

const SandboxIdField = z.string().max(100);

export const CreateSecretBody = z.strictObject({
  name: SecretName,
  value: z
    .string()
    .min(1)
    .max(32 * 1024)
    // It becomes an environment variable, which cannot hold a NUL, and is stored as UTF-8.
    .refine((v) => !v.includes('\u0000') && v.isWellFormed(), { error: 'must not contain NUL bytes or unpaired surrogates' })
    // Output is masked for every secret: a value this short would mask ordinary text everywhere,
    // and one left unmasked would leak. Refused, so that every stored secret is masked.
    .refine((v) => Buffer.byteLength(v) >= MASK_MIN_BYTES, { error: `must be at least ${MASK_MIN_BYTES} bytes long, so that it can be masked in output` })
    .meta({ description: 'Stored encrypted; never returned by any route' }),
  sandboxId: SandboxIdField.optional().meta({ description: 'Scope the secret to one sandbox; account-wide when omitted' }),
});

export const SecretScopeQuery = z.strictObject({ sandboxId: SandboxIdField.optional() });

export const SecretParams = z.strictObject({ name: z.string().max(200) });

export const SecretSummary = z.object({ name: z.string(), sandboxId: z.string().nullable(), createdAt: timestamp });

export const SecretList = listOf(SecretSummary);
