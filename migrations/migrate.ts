import { MikroORM } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import pg from 'pg';
import { ormOptions } from '../shared/db/orm.ts';
import { migrationsList } from './index.ts';

const MIGRATION_LOCK_ID = 7_361_001;

/**
 * Brings the database at `databaseUrl` to the current schema, with an ORM of its own (closed
 * after). A session-level advisory lock, held on a connection of its own, makes concurrent release
 * runs (several deploys at once) wait for each other. Answers the names of the migrations applied.
 */
export async function migrateDatabase(databaseUrl: string): Promise<string[]> {
  const orm = await MikroORM.init({
    ...ormOptions(databaseUrl, 2),
    extensions: [Migrator],
    migrations: {
      migrationsList,
      tableName: 'paddock_migrations',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
  });
  try {
    const lockClient = new pg.Client({ connectionString: databaseUrl });
    await lockClient.connect();
    try {
      await lockClient.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
      const done = await orm.migrator.up();
      return done.map((m) => m.name);
    } finally {
      await lockClient.end();
    }
  } finally {
    await orm.close(true);
  }
}
