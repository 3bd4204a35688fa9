import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import { openOrm } from '../shared/db/orm.ts';

export interface RunningWorkers {
  close(): Promise<void>;
}

/** Starts the job processors of this process. The sandbox jobs arrive with the lifecycle work. */
export async function startWorkers(config: Config, log: Logger): Promise<RunningWorkers> {
  const orm = await openOrm(config.DATABASE_URL, config.PADDOCK_DB_POOL_MAX);
  log.debug('no job processors registered yet');
  return {
    async close() {
      await orm.close(true);
    },
  };
}
