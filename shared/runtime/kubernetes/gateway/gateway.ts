import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../../logger.ts';
import type { Upstream } from '../../../network/resolvers.ts';
import { EgressBroker, upstreamResolver } from '../../local/egress-broker.ts';
import { serveGatewayDns } from './dns.ts';
import { servePassThrough } from '../../pass-through.ts';
import { watchSandboxes } from './sandboxes.ts';
import { publishTrust, trustConfigMap } from './trust.ts';
import { refusalCounts } from './refusals.ts';
import { NetworkPolicyClient } from '../network-policy.ts';

// Paddock's egress gateway on Kubernetes (deploy/kubernetes/components/egress-gateway): the one
// place sandbox pods reach names through. Its DNS answers each pod by its policy (dns.ts), its
// ports 80 and 443 carry the pod's connections on by name (../../pass-through.ts), its broker adds brokered
// credentials (local/egress-broker.ts). It keeps nothing another replica needs: what it knows of
// a sandbox it watches on the API server (sandboxes.ts), so any number run behind one Service.

const TRUST_RETRY_MS = 10_000;
/** Connections one listener of a replica holds at once, every sandbox's together (each has its own cap besides). */
const CONNECTIONS_AT_MOST = 20_000;

export interface EgressGatewayConfig {
  kubeConfig: KubeConfig;
  /** The sandboxes' namespace. */
  namespace: string;
  /** The gateway Service's address, which allowed names are answered with. */
  address: string;
  upstreams: readonly Upstream[];
  /** Where it listens: an address, and its DNS (UDP and TCP), HTTP and HTTPS ports (0: any free one). */
  listen: { host: string; dns: number; http: number; https: number };
  /** The egress's certificate authority (PEM files); without it nothing is brokered. */
  ca?: { cert: string; key: string; leafKey: string };
  openssl: string;
  /** Authorities trusted upstream besides the system's (PEM text). */
  upstreamCa?: string;
  /** This replica's name (its pod's), which its refusal counts are written under. */
  replica: string;
  log?: Logger;
}

export interface RunningGateway {
  /** The ports it listens on, as bound. */
  ports: { dns: number; http: number; https: number };
  close(): Promise<void>;
}

export async function startEgressGateway(config: EgressGatewayConfig): Promise<RunningGateway> {
  const sandboxes = await watchSandboxes(config.kubeConfig, config.namespace);
  const refusals = refusalCounts(new NetworkPolicyClient(config.kubeConfig, config.namespace), config.replica);
  const refused = (id: string) => refusals.add(id);
  const resolver = upstreamResolver(config.upstreams);
  const broker = config.ca && new EgressBroker({ ca: config.ca, openssl: config.openssl, upstreams: config.upstreams, upstreamCa: config.upstreamCa });
  const { host } = config.listen;
  const udp = createSocket({ type: 'udp4', reuseAddr: false });
  udp.bind(config.listen.dns, host);
  await once(udp, 'listening');
  const dnsPort = udp.address().port;
  const [dnsTcp, http, https] = await Promise.all([
    listening(createServer(), host, dnsPort),
    listening(createServer({ pauseOnConnect: true }), host, config.listen.http),
    listening(createServer({ pauseOnConnect: true }), host, config.listen.https),
  ]);
  for (const server of [dnsTcp, http, https]) server.maxConnections = CONNECTIONS_AT_MOST;
  const closers = [
    serveGatewayDns(udp, dnsTcp, { sandboxes, upstreams: config.upstreams, via: config.address, refused }),
    servePassThrough(http, 80, { sandboxes, resolver, refused }),
    servePassThrough(https, 443, { sandboxes, resolver, refused, ...(broker ? { broker } : {}) }),
    () => refusals.stop(),
  ];

  // Sandboxes trust what it signs with: published until the API server takes it.
  let trustTimer: NodeJS.Timeout | undefined;
  let closed = false;
  if (config.ca) {
    const configMap = await trustConfigMap(await readFile(config.ca.cert, 'utf8'));
    const publish = () =>
      publishTrust(config.kubeConfig, config.namespace, configMap).then(
        () => config.log?.info('egress trust published'),
        (err: unknown) => {
          config.log?.warn({ err: (err as Error).message }, 'could not publish the egress trust; trying again');
          if (!closed) trustTimer = setTimeout(publish, TRUST_RETRY_MS);
        },
      );
    void publish();
  } else config.log?.warn('no egress certificate authority: brokered credentials are not added');

  return {
    ports: { dns: dnsPort, http: (http.address() as AddressInfo).port, https: (https.address() as AddressInfo).port },
    async close() {
      closed = true;
      clearTimeout(trustTimer);
      for (const close of closers) close();
      await refusals.flush();
      await sandboxes.stop();
    },
  };
}

function listening(server: Server, host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
