import type pg from 'pg';

/**
 * kysely's controlled transaction, which the ORM's `em.transactional` starts, never gives back a
 * connection whose BEGIN failed: it was checked out for the transaction and only a commit or a
 * rollback returns it. A BEGIN fails on a connection PostgreSQL has cut that the pool has not yet
 * seen die (after a restart, a failover, an idle-session kill), so each such moment kept one of the
 * pool's connections forever: a pool of one stopped serving, and shutdown waited on it (a CI run
 * of test/faults/postgres-outage.test.ts). This gives such a connection back, as broken, so the pool
 * drops it. Only kysely sends BEGIN with a parameter array; Paddock's own transactions on raw
 * clients (shared/db/batch.ts, shared/repositories/policy.ts) release their clients themselves.
 */
export function releaseOnFailedBegin(pool: pg.Pool): void {
  // 'connect' comes once per new client, before its first checkout: each client is wrapped once.
  pool.on('connect', (client) => {
    const query = client.query as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = function guardedQuery(this: pg.PoolClient, ...args: unknown[]) {
      const result = query.apply(this, args);
      if (args[0] === 'begin' && Array.isArray(args[1]) && result instanceof Promise) {
        result.catch((err: unknown) => {
          // client.release is this checkout's (the pool sets it at each one).
          client.release(err instanceof Error ? err : new Error(String(err)));
        });
      }
      return result;
    };
  });
}
