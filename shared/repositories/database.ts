import type { ClientBase } from 'pg';
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from '../db/placeholders.ts';

// The database itself, apart from any aggregate: whether it answers, and the session locks that
// make one process at a time do a piece of work.

/** Resolves once PostgreSQL has answered a trivial query on the ORM's pool. */
export async function ping(em: EntityManager): Promise<void> {
  await execute(em, 'select 1');
}

/** Takes the session-level advisory lock (`lockClass`, `key`) on `client` if it is free; held until the session ends. */
export async function trySessionLock(client: ClientBase, lockClass: number, key: string): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1, hashtext($2)) as ok', [lockClass, key]);
  return rows[0]?.ok === true;
}
