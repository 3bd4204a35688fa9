// The `release` role: applies pending migrations and exits. Safe to run from several places at
// once (see migrate()).
import { loadConfigOrExit } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { openOrm, migrate } from '../shared/db/orm.ts';

const config = loadConfigOrExit('release');
const log = createLogger(config.PADDOCK_LOG_LEVEL, 'release');
const orm = await openOrm(config.DATABASE_URL, 2);
try {
  const applied = await migrate(orm, config.DATABASE_URL);
  log.info({ applied }, applied.length ? 'migrations applied' : 'database is up to date');
} finally {
  await orm.close(true);
}
