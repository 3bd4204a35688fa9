import type { PoolClient, QueryResult } from 'pg';
import { ormPool } from './orm.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { positional } from './placeholders.ts';

/** SQL with numbered placeholders ($1, $2, ...) and its values. */
export interface Statement {
  sql: string;
  params: readonly unknown[];
}

/** Turns a statement into SQL with its values as literals: the ORM's own formatting (`platform.formatQuery`). */
export type FormatSql = (sql: string, params: readonly unknown[]) => string;

// Rows as pg gives them: column name to value.
export type Rows = Record<string, unknown>[];

/**
 * A transaction whose statements travel in batches: each batch is one round trip (the simple
 * query protocol, which runs several statements and answers each one's rows), BEGIN goes with the
 * first batch and COMMIT with the last. Under READ COMMITTED each statement of a batch still takes
 * its own snapshot, so a statement after a row lock sees what the lock waited for. The values are
 * formatted into the SQL exactly as the ORM formats them for every `em.execute`.
 */
export class BatchedTransaction {
  #begun = false;
  #ended = false;
  readonly #client: PoolClient;
  readonly #format: FormatSql;

  constructor(client: PoolClient, format: FormatSql) {
    this.#client = client;
    this.#format = format;
  }

  get open(): boolean {
    return this.#begun && !this.#ended;
  }

  /** Runs the statements in one round trip (BEGIN ahead of them the first time); their rows, in order. */
  send(statements: readonly Statement[]): Promise<Rows[]> {
    return this.#run(statements, false);
  }

  /** Runs the statements and COMMIT in one round trip; their rows, in order. */
  commitWith(statements: readonly Statement[]): Promise<Rows[]> {
    return this.#run(statements, true);
  }

  async rollback(): Promise<void> {
    if (!this.open) return;
    this.#ended = true;
    await this.#client.query('rollback');
  }

  async #run(statements: readonly Statement[], commit: boolean): Promise<Rows[]> {
    if (this.#ended) throw new Error('the transaction has ended');
    const parts = statements.map((s) => this.#format(s.sql, s.params));
    const lead = this.#begun ? 0 : 1;
    if (!this.#begun) parts.unshift('begin');
    if (commit) parts.push('commit');
    this.#begun = true;
    // A failing statement aborts the batch's later ones (COMMIT included): the caller rolls back.
    const answer = (await this.#client.query(parts.join(';\n'))) as QueryResult | QueryResult[];
    if (commit) this.#ended = true;
    const results = Array.isArray(answer) ? answer : [answer];
    return results.slice(lead, lead + statements.length).map((r) => r.rows as Rows);
  }
}

/**
 * Runs `work` in a batched transaction on a connection of the ORM's own pool, its values formatted
 * by the ORM's platform: committed with its last batch (`commitWith`) or, if `work` returns
 * without one, by a COMMIT of its own; rolled back on a throw.
 */
export async function inBatchedTransaction<T>(em: EntityManager, work: (tx: BatchedTransaction) => Promise<T>): Promise<T> {
  const pool = await ormPool(em);
  const platform = em.getPlatform();
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const tx = new BatchedTransaction(client, (sql, params) => {
      // Every statement names its values $1, $2...; the ORM's formatter takes them in order as `?`.
      const p = positional(sql, params);
      return platform.formatQuery(p.sql, p.params);
    });
    try {
      const result = await work(tx);
      if (tx.open) await tx.commitWith([]);
      return result;
    } catch (err) {
      // A connection that cannot even roll back is not given back to the pool.
      await tx.rollback().catch((rollbackErr: unknown) => {
        broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
      });
      throw err;
    }
  } finally {
    client.release(broken);
  }
}
