// The `worker` role: runs the BullMQ job processors. Run as many as the load needs.
import { loadConfigOrExit } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { onShutdownSignal } from '../shared/shutdown.ts';
import { startWorkers } from './workers.ts';

const config = loadConfigOrExit('worker');
const log = createLogger(config.PADDOCK_LOG_LEVEL, 'worker');
const workers = await startWorkers(config, log).catch((err: unknown) => {
  log.fatal({ err: err instanceof Error ? err.message : String(err) }, 'worker could not start');
  process.exit(1);
});
// With the default port (0, any free one) the log is where a bare process's port is read.
log.info({ metricsPort: workers.metricsPort }, 'worker started');
onShutdownSignal(log, config.PADDOCK_SHUTDOWN_TIMEOUT_SECONDS, workers.close, workers.shutdownSteps);
