import type { EntityManager } from '@mikro-orm/postgresql';

export interface AllowlistRow {
  commands: string[];
  updatedAt: Date | null;
}

/** The account's allowlist; an empty list means every command is allowed. */
export async function getAllowlist(em: EntityManager, accountId: string): Promise<AllowlistRow> {
  const [row] = await em.execute<{ commands: string[]; updated_at: Date }[]>(
    'select commands, updated_at from allowlists where account_id = ?',
    [accountId],
  );
  return row ? { commands: row.commands, updatedAt: new Date(row.updated_at) } : { commands: [], updatedAt: null };
}

export async function putAllowlist(em: EntityManager, accountId: string, commands: string[]): Promise<AllowlistRow> {
  const [row] = await em.execute<{ commands: string[]; updated_at: Date }[]>(
    `insert into allowlists (account_id, commands, updated_at) values (?, ?::jsonb, now())
     on conflict (account_id) do update set commands = excluded.commands, updated_at = now()
     returning commands, updated_at`,
    [accountId, JSON.stringify(commands)],
  );
  return { commands: row!.commands, updatedAt: new Date(row!.updated_at) };
}

export async function clearAllowlist(em: EntityManager, accountId: string): Promise<void> {
  await em.execute('delete from allowlists where account_id = ?', [accountId]);
}
