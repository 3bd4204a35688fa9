// The `egress-gateway` role, on Kubernetes only: sandbox pods' DNS, and the way their names and
// brokered credentials go out (shared/runtime/kubernetes/gateway/). Run as many as the load needs
// behind one Service; it needs the Kubernetes API (to know the pods) and no database.
import { readFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '../shared/logger.ts';
import { onShutdownSignal } from '../shared/shutdown.ts';
import { parseUpstreams } from '../shared/network/resolvers.ts';
import { parseGatewayConfig, type GatewayConfig } from './egress-gateway-config.ts';
import { startEgressGateway } from '../shared/runtime/kubernetes/gateway/gateway.ts';
import { gatewayAddress } from '../shared/runtime/kubernetes/egress-gateway.ts';

let env: GatewayConfig;
try {
  env = parseGatewayConfig(process.env);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(78); // EX_CONFIG
}
const log = createLogger(env.PADDOCK_LOG_LEVEL, 'egress-gateway');
const caFiles = { cert: join(env.PADDOCK_EGRESS_CA_DIR, 'ca.pem'), key: join(env.PADDOCK_EGRESS_CA_DIR, 'ca.key'), leafKey: join(env.PADDOCK_EGRESS_CA_DIR, 'leaf.key') };
const ca = await Promise.all(Object.values(caFiles).map((file) => access(file))).then(
  () => caFiles,
  () => undefined,
);
const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault(); // KUBECONFIG, or the in-cluster service account
const [dns, http, https] = env.PADDOCK_EGRESS_GATEWAY_PORTS;
const gateway = await startEgressGateway({
  kubeConfig,
  namespace: env.PADDOCK_KUBE_NAMESPACE,
  address: await gatewayAddress(env.PADDOCK_EGRESS_GATEWAY),
  upstreams: parseUpstreams(env.PADDOCK_EGRESS_RESOLVERS),
  listen: { host: env.PADDOCK_EGRESS_GATEWAY_LISTEN, dns, http, https },
  // Its pod's name: the counts it writes are its own.
  replica: (process.env.HOSTNAME || hostname()).toLowerCase().replace(/[^a-z0-9.-]/g, '-').slice(0, 63),
  ...(ca ? { ca } : {}),
  openssl: 'openssl',
  ...(env.PADDOCK_EGRESS_UPSTREAM_CA ? { upstreamCa: readFileSync(env.PADDOCK_EGRESS_UPSTREAM_CA, 'utf8') } : {}),
  log,
}).catch((err: unknown) => {
  log.fatal({ err: err instanceof Error ? err.message : String(err) }, 'egress gateway could not start');
  process.exit(1);
});
log.info({ ports: gateway.ports, brokering: ca !== undefined }, 'egress gateway started');
onShutdownSignal(log, env.PADDOCK_SHUTDOWN_TIMEOUT_SECONDS, () => gateway.close());
