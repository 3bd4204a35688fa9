import type { Queue } from 'bullmq';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { SandboxRuntime } from '../shared/runtime/types.ts';
import type { WorkerMetrics } from './metrics.ts';

/** What every job processor and the reaper share within one worker process. */
export interface WorkerDeps {
  config: Config;
  orm: MikroORM;
  queue: Queue;
  runtime: SandboxRuntime;
  log: Logger;
  metrics: WorkerMetrics;
}
