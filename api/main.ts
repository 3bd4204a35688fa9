// The `web` role: the HTTP API. Stateless; run as many as the load needs.
import { loadConfigOrExit } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { onShutdownSignal } from '../shared/shutdown.ts';
import { startApi } from './server.ts';

const config = loadConfigOrExit('web');
const log = createLogger(config.PADDOCK_LOG_LEVEL, 'web');
const api = await startApi(config, { log });
log.info({ url: api.url }, 'listening');
onShutdownSignal(log, config.PADDOCK_SHUTDOWN_TIMEOUT_SECONDS, api.close);
