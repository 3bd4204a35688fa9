// The `egress-gateway` role, on Kubernetes only: sandbox pods' DNS, and the way their names and
// brokered credentials go out (shared/runtime/kubernetes/gateway/). Run as many as the load needs
// behind one Service; it needs the Kubernetes API (to know the pods) and no database.
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { readFileSync } from 'node:fs';
import { createLogger } from '../shared/logger.ts';
import { onShutdownSignal } from '../shared/shutdown.ts';
import { parseUpstreams } from '../shared/network/resolvers.ts';
import { GATEWAY_PORTS } from '../shared/runtime/kubernetes/egress-gateway.ts';
import { startEgressGateway } from '../shared/runtime/kubernetes/gateway/gateway.ts';

const port = z.string().regex(/^\d{1,5}$/).transform(Number).pipe(z.number().int().max(65_535));
const schema = z.object({
  PADDOCK_LOG_LEVEL: z.string().default('info'),
  PADDOCK_KUBE_NAMESPACE: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/).default('paddock-sandboxes'),
  /** Its Service's cluster address: what allowed names are answered with. */
  PADDOCK_EGRESS_GATEWAY: z.ipv4(),
  PADDOCK_EGRESS_RESOLVERS: z.string().optional(),
  PADDOCK_EGRESS_UPSTREAM_CA: z.string().optional(),
  /** The authority's Secret as mounted: ca.pem, ca.key and leaf.key. */
  PADDOCK_EGRESS_CA_DIR: z.string().default('/etc/paddock/egress-ca'),
  PADDOCK_EGRESS_GATEWAY_LISTEN: z.string().default('0.0.0.0'),
  /** Its DNS, HTTP and HTTPS ports (the Service maps 53, 80 and 443 onto them). */
  PADDOCK_EGRESS_GATEWAY_PORTS: z
    .string()
    .default(`${GATEWAY_PORTS.dns},${GATEWAY_PORTS.http},${GATEWAY_PORTS.https}`)
    .transform((text) => text.split(',').map((p) => p.trim()) as [string, string, string])
    .pipe(z.tuple([port, port, port])),
  PADDOCK_SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().int().min(1).default(25),
});

const parsed = schema.safeParse(process.env);
if (!parsed.success) {
  process.stderr.write(`Invalid configuration:\n${parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}\n`);
  process.exit(78); // EX_CONFIG
}
const env = parsed.data;
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
  address: env.PADDOCK_EGRESS_GATEWAY,
  upstreams: parseUpstreams(env.PADDOCK_EGRESS_RESOLVERS),
  listen: { host: env.PADDOCK_EGRESS_GATEWAY_LISTEN, dns, http, https },
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
