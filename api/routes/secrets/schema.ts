import { z } from 'zod';
import { listOf, timestamp } from '../common-schemas.ts';
import { ENV_NAME, isReservedKey } from '../../../shared/exec/env-names.ts';
import { isProtectedVariable } from '../../../shared/allowlist/index.ts';
import { MASK_MIN_BYTES } from '../../../shared/exec/masker.ts';
import { injectHostKey, parseInjectHost, UNINJECTABLE_HEADERS, VALUE_PLACEHOLDER } from '../../../shared/network/brokered.ts';

export const SecretName = z
  .string()
  .min(1)
  .max(128)
  .regex(ENV_NAME, { error: 'must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)' })
  .refine((n) => !isProtectedVariable(n), { error: 'is reserved: it can change which program or code runs' })
  .refine((n) => !isReservedKey(n), { error: 'must not be __proto__ or start with __PADDOCK_ (reserved)' });

const SandboxIdField = z.string().max(100);

/** What a header's value may hold, as the egress writes it: TAB and printable ASCII, no line break. */
const HEADER_TEXT = /^[\t\x20-\x7e]*$/;
/** An HTTP field name (RFC 9110's token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const InjectHost = z
  .string()
  .min(1)
  .max(255)
  .superRefine((text, ctx) => {
    const parsed = parseInjectHost(text);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)}: ${parsed}` });
  })
  // As the egress matches it (lowercase, no final dot); left as sent when refused just above.
  .overwrite((text) => {
    const parsed = parseInjectHost(text);
    return typeof parsed === 'string' ? text : injectHostKey(parsed);
  })
  .meta({ description: 'A domain (api.example.com), or *.example.com for the names below it; no port, no address' });

export const SecretInjection = z
  .strictObject({
    hosts: z
      .array(InjectHost)
      .min(1)
      .max(16)
      .overwrite((hosts) => [...new Set(hosts)])
      .meta({ description: "The hosts whose HTTPS requests from the sandbox get the header (only where the sandbox's egress policy reaches them)" }),
    header: z
      .string()
      .min(1)
      .max(64)
      .regex(HEADER_NAME, { error: 'must be an HTTP header name' })
      .refine((h) => !UNINJECTABLE_HEADERS.has(h.toLowerCase()), { error: 'is a header that frames or routes the request, which no secret may set' })
      .default('Authorization')
      .meta({ description: 'The header set (replacing one of the same name the program sent); default Authorization' }),
    format: z
      .string()
      .max(512)
      .refine((f) => f.split(VALUE_PLACEHOLDER).length === 2, { error: `must contain ${VALUE_PLACEHOLDER} exactly once` })
      .regex(HEADER_TEXT, { error: 'must be TAB and printable ASCII only' })
      .default(`Bearer ${VALUE_PLACEHOLDER}`)
      .meta({ description: `The header's value, ${VALUE_PLACEHOLDER} standing for the secret's; default "Bearer ${VALUE_PLACEHOLDER}"` }),
  })
  .meta({
    description:
      "Brokered instead of exposed: the secret is in no environment; the sandbox's egress sets the header on its HTTPS requests to these hosts, so a program uses the credential without being able to read it",
  });

export const CreateSecretBody = z
  .strictObject({
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
    inject: SecretInjection.optional(),
  })
  .superRefine((body, ctx) => {
    // A brokered value is written into a header line.
    if (body.inject && !HEADER_TEXT.test(body.value)) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'must be TAB and printable ASCII only with inject: it is sent in a header' });
    }
  });

export const SecretScopeQuery = z.strictObject({ sandboxId: SandboxIdField.optional() });

export const SecretParams = z.strictObject({ name: z.string().max(200) });

export const SecretSummary = z.object({
  name: z.string(),
  sandboxId: z.string().nullable(),
  createdAt: timestamp,
  inject: SecretInjection.nullable().meta({ description: 'How the secret is brokered; null for one given to execs as an environment variable' }),
});

export const SecretList = listOf(SecretSummary);
