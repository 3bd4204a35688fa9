import { z } from 'zod';
import { listOf, timestamp } from '../common-schemas.ts';
import { SCOPES } from '../../../shared/scopes.ts';

export const CreateApiKeyBody = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1)
    .max(100)
    // Nor unpaired surrogates: they cannot be stored as UTF-8, so the name would come back altered.
    .regex(/^[^\p{Cc}\p{Cs}]*$/u, { error: 'must not contain control characters or unpaired surrogates' })
    .optional()
    .meta({ description: 'A label to tell keys apart; defaults to "default"' }),
  scopes: z
    .array(z.enum(SCOPES))
    .min(1)
    .max(SCOPES.length * 4)
    .optional()
    .meta({ description: `What the key may do; every scope when omitted. One or more of: ${SCOPES.join(', ')}` }),
});

export const ApiKeyParams = z.strictObject({
  // Any string: an id that is malformed, unknown or another account's all answer the same 404.
  keyId: z.string().max(100),
});

const ScopeList = z.array(z.enum(SCOPES)).meta({ description: 'What the key may do' });

export const ApiKeySummary = z.object({
  id: z.string(),
  name: z.string(),
  scopes: ScopeList,
  start: z.string().meta({ description: 'The first characters of the key, to recognise it' }),
  createdAt: timestamp,
  lastUsedAt: timestamp.nullable(),
});

export const CreatedApiKey = z.object({
  id: z.string(),
  name: z.string(),
  key: z.string().meta({ description: 'The raw key (pdk_live_…); shown this once and never again' }),
  scopes: ScopeList,
  start: z.string(),
  createdAt: timestamp,
});

export const ApiKeyList = listOf(ApiKeySummary);
