import type { Pool } from 'pg';
import type { ReadViews } from '../../../shared/cache/read-views.ts';
import { ApiError } from '../../../shared/errors.ts';
import type { PreviewTarget } from '../../../shared/previews/hosts.ts';
import { readPreviewAccess, type PreviewAccess } from '../../../shared/repositories/previews.ts';
import type { ConnectionSlots } from './connection-slots.ts';

// Whether a request may pass to a sandbox's port, and its slot of the sandbox's connections. The
// record is PostgreSQL's; what it answered for a token (or for none, on a public port) is kept as a
// read view of the sandbox's account (shared/cache/read-views.ts), so that the next request on it
// is let through, and its slot taken, in one Redis round trip. Opening or revoking a preview and
// every transition of the sandbox replace the account's generation before they are answered, so a
// revoked token or an ended sandbox is refused at once, by every replica, as by the record.

export interface PreviewAdmissionDeps {
  pg: Pool;
  views: Pick<ReadViews, 'enabled' | 'keysOf' | 'view'>;
  slots: Pick<ConnectionSlots, 'take' | 'takeViewed'>;
}

/** Sandboxes whose account this process remembers: a sandbox never changes account, so nothing here goes stale. */
const ACCOUNTS_KEPT = 10_000;

export class PreviewAdmission {
  readonly #deps: PreviewAdmissionDeps;
  readonly #accounts = new Map<string, string>();

  constructor(deps: PreviewAdmissionDeps) {
    this.#deps = deps;
  }

  /** A signed URL's token: valid for this port of this sandbox, or the request is refused. */
  async check(target: PreviewTarget, digest: Buffer | undefined): Promise<void> {
    const access = await this.#read(target, digest);
    refuseUnless(access, target, true);
  }

  /** Lets the request through (or refuses it) and takes its slot: the slot's release, and the sandbox's account. */
  async enter(target: PreviewTarget, digest: Buffer | undefined): Promise<{ release: () => void; accountId: string }> {
    const { views, slots } = this.#deps;
    const accountId = this.#accounts.get(target.sandboxId);
    const name = viewName(target, digest);
    if (accountId && views.enabled) {
      const taken = await slots.takeViewed(target.sandboxId, views.keysOf(accountId, name));
      if (taken === 'busy') throw busy();
      if (taken) {
        if (stillValid(taken.view)) return { release: taken.release, accountId };
        taken.release();
      }
    }
    const access = accountId
      ? await views.view<PreviewAccess>(accountId, name, () => readPreviewAccess(this.#deps.pg, target.sandboxId, target.port, digest), (a) => passes(a) && (digest === undefined || a.tokenValid))
      : await this.#read(target, digest);
    refuseUnless(access, target, false);
    const release = await slots.take(target.sandboxId);
    if (!release) throw busy();
    return { release, accountId: access.accountId };
  }

  async #read(target: PreviewTarget, digest: Buffer | undefined): Promise<PreviewAccess | undefined> {
    const access = await readPreviewAccess(this.#deps.pg, target.sandboxId, target.port, digest);
    if (access.accountId && !this.#accounts.has(target.sandboxId)) {
      if (this.#accounts.size >= ACCOUNTS_KEPT) this.#accounts.delete(this.#accounts.keys().next().value!);
      this.#accounts.set(target.sandboxId, access.accountId);
    }
    return access;
  }
}

/** One port's view for one token (its digest), or for none. */
function viewName(target: PreviewTarget, digest: Buffer | undefined): string {
  return `preview:${target.sandboxId}:${target.port}:${digest ? digest.toString('hex') : '-'}`;
}

function passes(access: PreviewAccess): boolean {
  return access.running && access.previewed && (access.public || access.tokenValid);
}

/** A kept view lets a request through until its token lapses. */
function stillValid(view: string): boolean {
  try {
    const access = JSON.parse(view) as PreviewAccess;
    return passes(access) && (access.tokenExpiresAt === null || access.tokenExpiresAt > Date.now());
  } catch {
    return false;
  }
}

function refuseUnless(access: PreviewAccess | undefined, target: PreviewTarget, tokenNeeded: boolean): asserts access is PreviewAccess & { accountId: string } {
  if (!access?.running || !access.accountId) throw new ApiError('sandbox_not_found', `No running sandbox ${target.sandboxId}.`);
  if (!passes(access) || (tokenNeeded && !access.tokenValid) || (access.tokenExpiresAt !== null && access.tokenExpiresAt <= Date.now() && !access.public)) {
    throw new ApiError('preview_unauthorized', `Port ${target.port} of sandbox ${target.sandboxId} takes a preview token made for it (X-Paddock-Preview-Token, or the signed URL in a browser).`);
  }
}

function busy(): ApiError {
  return new ApiError('preview_busy', 'The sandbox has as many connections through its previews as it may; retry shortly.', { headers: { 'Retry-After': '1' } });
}
