// A `worker` process as workers/main.ts runs it, but with the test network's resolver and connect
// step (test/helpers/webhooks.ts), for tests that kill a worker mid-delivery. The network comes in
// TEST_WEBHOOK_NETWORK: {ca, hosts: {name: port}}; every name is a receiver on 127.0.0.1.
import { connect as tlsConnect } from 'node:tls';
import { loadConfigOrExit } from '../../shared/config.ts';
import { createLogger } from '../../shared/logger.ts';
import { onShutdownSignal } from '../../shared/shutdown.ts';
import { startWorkers } from '../../workers/workers.ts';
import type { WebhookTransport } from '../../shared/webhooks/transport.ts';

const network = JSON.parse(process.env.TEST_WEBHOOK_NETWORK ?? '{}') as { ca: string; hosts: Record<string, number> };
const names = Object.keys(network.hosts);
const transport: WebhookTransport = {
  async resolve(hostname) {
    const i = names.indexOf(hostname);
    if (i < 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return [{ address: `203.0.113.${100 + i}`, family: 4 }];
  },
  connect(req) {
    const port = network.hosts[names[Number(req.address.split('.')[3]) - 100] ?? ''];
    if (!port) throw new Error(`test network: ${req.address} unreachable`);
    return tlsConnect({ host: '127.0.0.1', port, servername: req.servername, ca: network.ca });
  },
};

const config = loadConfigOrExit('worker');
const log = createLogger(config.PADDOCK_LOG_LEVEL, 'worker');
const workers = await startWorkers(config, log, { webhookTransport: transport, reaper: false });
log.info('worker started');
onShutdownSignal(log, config.PADDOCK_SHUTDOWN_TIMEOUT_SECONDS, workers.close);
