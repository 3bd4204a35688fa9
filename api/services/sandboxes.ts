import type { Pool } from 'pg';
import { ApiError } from '../../shared/errors.ts';
import type { Sandbox } from '../../shared/db/entities.ts';
import { isId } from '../../shared/ids.ts';
import { presentSandbox, type PresentedSandbox } from '../../shared/sandboxes/present.ts';
import type { Allowlist } from '../../shared/repositories/policy.ts';
import * as sandboxes from '../../shared/repositories/sandboxes.ts';
import type { SandboxPage } from '../../shared/repositories/sandboxes.ts';
import type { ReadViews, ViewRead } from '../../shared/cache/read-views.ts';
import type { OpenedSecrets } from '../../shared/secrets/opened.ts';
import { openedSecretsFor, openSecrets, type SecretOpening } from '../../shared/secrets/opening.ts';

// The API's reads of sandboxes, shaped for its hottest paths. What a sandbox may do, and every
// change of it, is the sandbox engine's (shared/sandboxes/engine.ts).

export type { SandboxPage };

/**
 * The account's sandbox as GET /v1/sandboxes/{id} presents it: a view kept in Redis while none of
 * the account's sandboxes changes (shared/cache/read-views.ts), else one round trip to PostgreSQL.
 */
export async function presentedOwnSandbox(deps: { pg: Pool; views: ReadViews }, accountId: string, id: string): Promise<PresentedSandbox> {
  // An id we never issue is unknown without a query (PostgreSQL refuses some strings, such as NUL).
  const load = async () => {
    const sandbox = await sandboxes.readOwnSandbox(deps.pg, accountId, id);
    return sandbox && presentSandbox(sandbox);
  };
  // Only an active one is kept: an account holds at most its concurrent cap of them, so what it
  // can make Redis hold is bounded, however many destroyed sandboxes it reads.
  const presented = isId('sbx', id) ? await deps.views.view(accountId, `sandbox:${id}`, load, (s) => s.state === 'active') : undefined;
  if (!presented) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
  return presented;
}

/** A sandbox, the allowlist its commands obey, and the secrets they get. */
export interface ExecContext {
  sandbox: Sandbox;
  allowlist: Allowlist;
  /** Decrypts what the read brought, if anything: called only for a command that may run. */
  openSecrets(): OpenedSecrets;
  /** The same secrets read afresh: a newer version, if one came since. */
  rereadSecrets(): Promise<OpenedSecrets>;
}

/** The account's read view of a sandbox's exec context, read with an exec's in-flight lease (the exec route's `leasedView`). */
export const execContextView = (sandboxId: string) => `exec:${sandboxId}`;

/**
 * The caller's sandbox with the policy an exec in it obeys, or 404: from `leased`, the read view
 * fetched with the request's lease, while its secrets are the version this process holds opened;
 * else one round trip to PostgreSQL, which brings the secrets' ciphertexts only if they changed
 * since this process last opened them, and is kept as that view. Every change of what it holds
 * (the sandbox's transitions, the allowlist, the secrets) replaces the account's generation
 * before it is answered, as for every view.
 */
export async function findOwnSandboxWithPolicy(
  deps: SecretOpening & { pg: Pool; views?: Pick<ReadViews, 'store'> },
  accountId: string,
  id: string,
  leased?: ViewRead,
): Promise<ExecContext> {
  const held = isId('sbx', id) ? deps.openedSecrets.get(accountId, id) : undefined;
  const kept = leased && 'hit' in leased ? sandboxes.keptSandboxWithPolicy(leased.hit) : undefined;
  if (kept && kept.sandbox.accountId === accountId && kept.sandbox.id === id && (kept.secrets.stored !== undefined || held?.version === kept.secrets.version)) {
    return contextOf(deps, accountId, id, kept, held);
  }
  const found = isId('sbx', id) ? await sandboxes.readOwnSandboxWithPolicy(deps.pg, accountId, id, held?.version ?? undefined) : undefined;
  if (!found) throw new ApiError('sandbox_not_found', `No sandbox ${id}.`);
  // Only an active one is kept: what an account can make Redis hold stays bounded by its cap.
  if (leased && 'seen' in leased && deps.views && found.sandbox.state === 'active') {
    void deps.views.store(accountId, execContextView(id), leased.seen, found.kept()).catch(() => undefined);
  }
  return contextOf(deps, accountId, id, found, held);
}

function contextOf(deps: SecretOpening & { pg: Pool }, accountId: string, id: string, read: sandboxes.SandboxWithPolicy, held: OpenedSecrets | undefined): ExecContext {
  const { sandbox, allowlist, secrets } = read;
  return { sandbox, allowlist, openSecrets: () => openSecrets(deps, accountId, id, secrets, held), rereadSecrets: () => openedSecretsFor(deps, accountId, id) };
}

/** One page of the caller's sandboxes, newest first; 404 for a cursor that is not one of them. */
export async function listOwnSandboxes(
  pool: Pool,
  accountId: string,
  options: { state: 'active' | 'destroyed' | 'all'; after?: string; limit: number },
): Promise<SandboxPage> {
  const page = options.after === undefined || isId('sbx', options.after) ? await sandboxes.listOwnSandboxes(pool, accountId, options) : undefined;
  if (!page) throw new ApiError('sandbox_not_found', `No sandbox ${options.after}.`);
  return page;
}
