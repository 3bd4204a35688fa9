import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { execute } from '../db/placeholders.ts';
import { newId } from '../ids.ts';
import type { RecordedEvent } from '../events/types.ts';
import { eventsLockStatement, recordEventUnderLock } from './events.ts';

// The previews aggregate's one way to the database: a sandbox's previewed ports, their tokens
// (digests only), and what the proxy reads to let a request through.

export interface PreviewRow {
  id: string;
  sandbox_id: string;
  port: number;
  public: boolean;
  expires_at: Date;
  created_at: Date;
}

export interface OpenPreview {
  accountId: string;
  sandboxId: string;
  port: number;
  /** Unset: a new preview is private, an existing one keeps its setting. */
  public?: boolean;
  digest: Buffer;
  tokenExpiresAt: Date;
  maxPorts: number;
}

export type PreviewOpening =
  | { outcome: 'opened'; preview: PreviewRow; created: boolean; event?: RecordedEvent }
  | { outcome: 'sandbox_not_found' | 'sandbox_not_running' | 'limit_reached' };

const COLUMNS = 'id, sandbox_id, port, public, expires_at, created_at';

/**
 * Makes the port's preview, or keeps it (its `public` changed if asked), and adds a token, in one
 * transaction under the account's lock, so concurrent requests through any replica count the
 * sandbox's previews exactly; a new preview's event is recorded with it.
 */
export function openPreview(em: EntityManager, input: OpenPreview): Promise<PreviewOpening> {
  return em.fork().transactional(async (tx) => {
    const lock = eventsLockStatement({ accountId: input.accountId });
    await execute(tx, lock.sql, lock.params);
    const [sandbox] = await execute<{ status: string }>(tx, 'select status from sandboxes where id = $1 and account_id = $2', [input.sandboxId, input.accountId]);
    if (!sandbox) return { outcome: 'sandbox_not_found' };
    if (sandbox.status !== 'running') return { outcome: 'sandbox_not_running' };
    let [preview] = await execute<PreviewRow>(
      tx,
      `update previews set public = coalesce($3, public), expires_at = greatest(expires_at, $4)
        where sandbox_id = $1 and port = $2 returning ${COLUMNS}`,
      [input.sandboxId, input.port, input.public ?? null, input.tokenExpiresAt],
    );
    let event: RecordedEvent | undefined;
    if (!preview) {
      const [{ n }] = (await execute<{ n: number }>(tx, 'select count(*)::int as n from previews where sandbox_id = $1', [input.sandboxId])) as [{ n: number }];
      if (n >= input.maxPorts) return { outcome: 'limit_reached' };
      [preview] = await execute<PreviewRow>(
        tx,
        `insert into previews (id, sandbox_id, account_id, port, public, expires_at) values ($1, $2, $3, $4, $5, $6) returning ${COLUMNS}`,
        [newId('prv'), input.sandboxId, input.accountId, input.port, input.public ?? false, input.tokenExpiresAt],
      );
      event = await recordEventUnderLock(tx, { accountId: input.accountId, sandboxId: input.sandboxId, type: 'preview.created', data: { preview: { sandboxId: input.sandboxId, port: input.port, public: preview!.public } } });
    }
    // A port's expired tokens go as a new one comes: a preview holds no more than its live tokens and a few.
    await execute(tx, 'delete from preview_tokens where preview_id = $1 and expires_at < now()', [preview!.id]);
    await execute(tx, 'insert into preview_tokens (digest, preview_id, expires_at) values ($1, $2, $3)', [input.digest, preview!.id, input.tokenExpiresAt]);
    return { outcome: 'opened', preview: preview!, created: event !== undefined, event };
  });
}

/** Removes the port's preview and every token of it, with its event; false when there was none. */
export function revokePreview(em: EntityManager, accountId: string, sandboxId: string, port: number): Promise<{ found: boolean; event?: RecordedEvent }> {
  return em.fork().transactional(async (tx) => {
    const lock = eventsLockStatement({ accountId });
    await execute(tx, lock.sql, lock.params);
    const [gone] = await execute<{ id: string }>(tx, 'delete from previews where sandbox_id = $1 and port = $2 and account_id = $3 returning id', [sandboxId, port, accountId]);
    if (!gone) return { found: false };
    const event = await recordEventUnderLock(tx, { accountId, sandboxId, type: 'preview.revoked', data: { preview: { sandboxId, port } } });
    return { found: true, event };
  });
}

/** The sandbox's previews by port; undefined when the sandbox is not the account's. */
export async function listPreviews(pool: Pool, accountId: string, sandboxId: string): Promise<PreviewRow[] | undefined> {
  const { rows } = await pool.query<PreviewRow & { owned: boolean }>(
    `select s.id is not null as owned, p.id, p.sandbox_id, p.port, p.public, p.expires_at, p.created_at
       from (select id from sandboxes where id = $1 and account_id = $2) s
       left join previews p on p.sandbox_id = s.id
      order by p.port`,
    [sandboxId, accountId],
  );
  if (!rows.length) return undefined;
  return rows.filter((r) => r.id !== null);
}

/** What decides whether a request may pass to a sandbox's port, in one round trip. */
export interface PreviewAccess {
  /** The sandbox exists and runs. */
  running: boolean;
  accountId: string | null;
  /** The port has a preview. */
  previewed: boolean;
  public: boolean;
  /** The token sent is one of this preview's, unexpired. */
  tokenValid: boolean;
  /** When that token lapses (ms since the epoch); null without a valid token. */
  tokenExpiresAt: number | null;
}

export async function readPreviewAccess(pool: Pool, sandboxId: string, port: number, digest: Buffer | undefined): Promise<PreviewAccess> {
  const { rows } = await pool.query<{ status: string; account_id: string; preview_id: string | null; public: boolean | null; token_expires_at: Date | null }>(
    `select s.status, s.account_id, p.id as preview_id, p.public,
            (select max(t.expires_at) from preview_tokens t where t.digest = $3 and t.preview_id = p.id and t.expires_at > now()) as token_expires_at
       from sandboxes s left join previews p on p.sandbox_id = s.id and p.port = $2
      where s.id = $1`,
    [sandboxId, port, digest ?? null],
  );
  const row = rows[0];
  return {
    running: row?.status === 'running',
    accountId: row?.account_id ?? null,
    previewed: !!row?.preview_id,
    public: !!row?.public,
    tokenValid: !!row?.token_expires_at,
    tokenExpiresAt: row?.token_expires_at ? row.token_expires_at.getTime() : null,
  };
}
