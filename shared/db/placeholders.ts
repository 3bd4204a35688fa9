import type { EntityManager } from '@mikro-orm/postgresql';

// Every statement of the repositories is written with PostgreSQL's numbered placeholders ($1,
// $2, ...), as the driver takes them. The ORM's `execute` and its value formatting (the batched
// transactions') take `?` placeholders, one per value in order: these turn the one into the other.
// So a statement holds no `?` of its own (jsonb's `?` operators are spelled jsonb_exists and kin).

const NUMBERED = /\$(\d+)/g;

/** `sql` with `?` placeholders and the values in their order (a value named twice is given twice). */
export function positional(sql: string, params: readonly unknown[]): { sql: string; params: unknown[] } {
  const ordered: unknown[] = [];
  const text = sql.replace(NUMBERED, (_, n: string) => {
    const index = Number(n) - 1;
    if (index < 0 || index >= params.length) throw new Error(`placeholder $${n} has no value (${params.length} given)`);
    ordered.push(params[index]);
    return '?';
  });
  return { sql: text, params: ordered };
}

/** Runs `sql` (numbered placeholders) through the ORM's connection of `em`, in its transaction if it is in one. */
export async function execute<T = Record<string, unknown>>(em: EntityManager, sql: string, params: readonly unknown[] = []): Promise<T[]> {
  const p = positional(sql, params);
  return (await em.execute(p.sql, p.params)) as unknown as T[];
}

/** `sql`'s numbered placeholders moved up by `by`: a statement put after `by` values of another. */
export function shifted(sql: string, by: number): string {
  return by === 0 ? sql : sql.replace(NUMBERED, (_, n: string) => `$${Number(n) + by}`);
}
