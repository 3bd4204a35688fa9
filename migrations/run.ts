// The `release` role: applies pending migrations and exits. Safe to run from several places at
// once (see migrateDatabase()).
import { loadConfigOrExit } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { migrateDatabase } from './migrate.ts';

const config = loadConfigOrExit('release');
const log = createLogger(config.PADDOCK_LOG_LEVEL, 'release');
const applied = await migrateDatabase(config.DATABASE_URL);
log.info({ applied }, applied.length ? 'migrations applied' : 'database is up to date');
