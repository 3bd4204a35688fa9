import pg from 'pg';

/** Writes held by holdWrites. */
export interface HeldWrites {
  /** Lets the held writes (and every later one) go on. */
  release(): Promise<void>;
  /** Releases, removes the trigger and closes the connection. */
  close(): Promise<void>;
}

/**
 * Holds some writes inside their transactions until the test lets them go: a trigger on `table`
 * waits on an advisory lock this helper's own connection keeps. Only rows `when` (SQL on NEW)
 * picks out are held, so tests running beside this one on the same database are not.
 */
export async function holdWrites(
  databaseUrl: string,
  options: { name: string; lockId: number; timing: 'before update' | 'after insert'; table: string; when: string },
): Promise<HeldWrites> {
  const { name, lockId, timing, table, when } = options;
  const fn = `paddock_test_hold_${name}`;
  const holder = new pg.Client({ connectionString: databaseUrl });
  await holder.connect();
  const close = async () => {
    await holder.query('select pg_advisory_unlock_all()').catch(() => undefined);
    await holder.query(`drop trigger if exists ${fn} on ${table}`).catch(() => undefined);
    await holder.end();
  };
  try {
    await holder.query(`create or replace function ${fn}() returns trigger language plpgsql as
      $$ begin perform pg_advisory_xact_lock_shared(${lockId}); return new; end $$`);
    await holder.query(`create or replace trigger ${fn} ${timing} on ${table} for each row when (${when}) execute function ${fn}()`);
    await holder.query('select pg_advisory_lock($1)', [lockId]);
  } catch (err) {
    await close();
    throw err;
  }
  return {
    release: async () => {
      await holder.query('select pg_advisory_unlock($1)', [lockId]);
    },
    close,
  };
}
