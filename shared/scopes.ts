import { ApiError } from './errors.ts';

/**
 * What an API key may do (docs/api.md, "API key scopes"). A key made without a list has them all. An
 * agent's key made without `allowlist:write` and `secrets:write` cannot lift the allowlist or
 * change the secrets that bind it.
 */
export const SCOPES = [
  'sandboxes:read',
  'sandboxes:write',
  'exec',
  'files:read',
  'files:write',
  'secrets:write',
  'allowlist:write',
  'webhooks:write',
  'previews:write',
  'snapshots:write',
  'network:write',
] as const;

export type Scope = (typeof SCOPES)[number];

export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value);

/** A key's scopes as stored (null: made before scopes existed, or without a list) made explicit. */
export const effectiveScopes = (stored: readonly string[] | null | undefined): Scope[] => (stored ? stored.filter(isScope) : [...SCOPES]);

/** 403 insufficient_scope for a key without `scope`, which `what` (a route, or a field of its body) needs. */
export function insufficientScope(scope: Scope, what: string): ApiError {
  return new ApiError('insufficient_scope', `This API key lacks the scope ${scope}, which ${what} needs.`, { extra: { scope } });
}
