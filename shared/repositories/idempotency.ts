import type { Pool } from 'pg';
import type { Rows, Statement } from '../db/batch.ts';

// Idempotency keys of sandbox creates: a first request with a key records the sandbox it made,
// in the create's own transaction; a retry with the key reads it there, under the account's lock.

/** What a first request with the key recorded; read under its account's lock by a retry. */
export interface IdempotencyRecord {
  requestHash: string;
  sandboxId: string;
  completedAt: Date | null;
  createdAt: Date;
}

export function idempotencyReadStatement(accountId: string, key: string): Statement {
  return { sql: 'select request_hash, sandbox_id, completed_at, created_at from idempotency_keys where account_id = $1 and key = $2', params: [accountId, key] };
}

/** The record idempotencyReadStatement read; none for a key not seen yet. */
export function idempotencyRecordFrom(rows: Rows): IdempotencyRecord | undefined {
  const row = rows[0] as { request_hash: string; sandbox_id: string; completed_at: Date | string | null; created_at: Date | string } | undefined;
  if (!row) return undefined;
  return {
    requestHash: row.request_hash,
    sandboxId: row.sandbox_id,
    completedAt: row.completed_at === null ? null : new Date(row.completed_at),
    createdAt: new Date(row.created_at),
  };
}

export function idempotencyInsertStatement(accountId: string, key: string, requestHash: string, sandboxId: string): Statement {
  return { sql: 'insert into idempotency_keys (account_id, key, request_hash, sandbox_id) values ($1, $2, $3, $4)', params: [accountId, key, requestHash, sandboxId] };
}

/** Marks the end of the first request with the key: retries now get its sandbox. */
export async function completeIdempotencyKey(pool: Pool, accountId: string, key: string): Promise<void> {
  await pool.query({
    name: 'paddock-idempotency-complete',
    text: 'update idempotency_keys set completed_at = now() where account_id = $1 and key = $2 and completed_at is null',
    values: [accountId, key],
  });
}

/** Forgets keys older than `hours`: a retry after that makes a new sandbox. */
export async function deleteIdempotencyKeysOlderThan(pool: Pool, hours: number): Promise<void> {
  await pool.query({
    name: 'paddock-idempotency-expire',
    text: `delete from idempotency_keys where created_at < now() - make_interval(hours => $1)`,
    values: [hours],
  });
}
