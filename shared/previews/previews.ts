import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { isId } from '../ids.ts';
import type { Announcer } from '../events/announce.ts';
import { listPreviews, openPreview, revokePreview, type PreviewRow } from '../repositories/previews.ts';
import { previewUrl } from './hosts.ts';
import { newPreviewToken, previewTokenDigest } from './tokens.ts';

// Previews' rules (docs/api.md, "Preview URLs"): a port of a running sandbox made reachable at a
// host of its own; private unless made public, opened by tokens scoped to that one port; at most
// PADDOCK_PREVIEW_MAX_PORTS ports a sandbox. The proxy that carries the traffic is the API's
// (api/services/previews/).

export type PreviewOptions = Pick<Config, 'PADDOCK_PREVIEW_DOMAIN' | 'PADDOCK_PREVIEW_MAX_PORTS'>;

export interface PreviewDeps {
  em: EntityManager;
  pg: Pool;
  announcer: Pick<Announcer, 'announce' | 'changed'>;
}

/** The query parameter of a signed URL, which a browser trades for a cookie. */
export const SIGNED_URL_PARAMETER = 'paddock_preview_token';

export interface OpenedPreview {
  preview: PreviewRow;
  token: string;
  signedUrl: string;
  tokenExpiresAt: Date;
}

/**
 * Makes the port's preview (or keeps it, `public` changed when given) with a new token valid for
 * `expiresInSeconds`. `apiPort`: the port the API was reached on, for `*.localhost` URLs.
 */
export async function openOwnPreview(
  deps: PreviewDeps,
  options: PreviewOptions,
  accountId: string,
  sandboxId: string,
  input: { port: number; public?: boolean; expiresInSeconds: number },
  apiPort: string | undefined,
): Promise<OpenedPreview> {
  if (!isId('sbx', sandboxId)) throw new ApiError('sandbox_not_found', `No sandbox ${sandboxId}.`);
  const token = newPreviewToken();
  const tokenExpiresAt = new Date(Date.now() + input.expiresInSeconds * 1000);
  const opened = await openPreview(deps.em, {
    accountId,
    sandboxId,
    port: input.port,
    public: input.public,
    digest: previewTokenDigest(token)!,
    tokenExpiresAt,
    maxPorts: options.PADDOCK_PREVIEW_MAX_PORTS,
  });
  if (opened.outcome !== 'opened') {
    if (opened.outcome === 'sandbox_not_found') throw new ApiError('sandbox_not_found', `No sandbox ${sandboxId}.`);
    if (opened.outcome === 'sandbox_not_running') throw new ApiError('sandbox_not_running', `Sandbox ${sandboxId} is not running: only a running sandbox's ports can be previewed.`);
    const max = options.PADDOCK_PREVIEW_MAX_PORTS;
    throw new ApiError('preview_limit_reached', `At most ${max} ports of a sandbox may have a preview at once; remove one first.`, { extra: { limit: max } });
  }
  // Kept, its `public` may have changed: what the proxy keeps of who may pass is stale either way.
  if (opened.event) await deps.announcer.announce([opened.event]);
  else await deps.announcer.changed([accountId]);
  const signed = new URL(previewUrl(sandboxId, input.port, options.PADDOCK_PREVIEW_DOMAIN, apiPort));
  signed.searchParams.set(SIGNED_URL_PARAMETER, token);
  return { preview: opened.preview, token, signedUrl: signed.toString(), tokenExpiresAt };
}

/** The sandbox's previews; 404 for a sandbox that is not the account's. */
export async function listOwnPreviews(pg: Pool, accountId: string, sandboxId: string): Promise<PreviewRow[]> {
  const rows = isId('sbx', sandboxId) ? await listPreviews(pg, accountId, sandboxId) : undefined;
  if (!rows) throw new ApiError('sandbox_not_found', `No sandbox ${sandboxId}.`);
  return rows;
}

/** Removes the port's preview: its tokens stop at once, and the proxy closes what is open through it. */
export async function revokeOwnPreview(deps: PreviewDeps, accountId: string, sandboxId: string, port: number): Promise<void> {
  if (!isId('sbx', sandboxId)) throw new ApiError('sandbox_not_found', `No sandbox ${sandboxId}.`);
  const { found, event } = await revokePreview(deps.em, accountId, sandboxId, port);
  if (!found) {
    // Another account's sandbox answers as an unknown one; the account's own, without this port previewed, says so.
    await listOwnPreviews(deps.pg, accountId, sandboxId);
    throw new ApiError('preview_not_found', `Sandbox ${sandboxId} has no preview of port ${port}.`);
  }
  await deps.announcer.announce([event]);
}
