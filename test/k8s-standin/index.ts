import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { WebSocketServer } from 'ws';
import type { SandboxRuntime } from '../../shared/runtime/types.ts';
import { chooseSubprotocol, handleExecUpgrade } from './exec.ts';
import { choosePortForwardSubprotocol, handlePortForwardUpgrade } from './port-forward.ts';
import { handleRest, POD_PORTFORWARD } from './rest.ts';
import { PodStore } from './store.ts';
import { CONFIG_MAP, NETWORK_POLICY, ObjectStore, SECRET, type ConfigMapJson, type NetworkPolicyJson, type ObjectJson, type SecretJson } from './objects.ts';

export { UNPULLABLE } from './store.ts';
export { SUBPROTOCOLS } from './exec.ts';
export { PORT_FORWARD_SUBPROTOCOLS } from './port-forward.ts';

export interface KubeStandin {
  url: string;
  kubeConfig: KubeConfig;
  /** The bearer token the stand-in accepts, for tests that speak to it without client-node. */
  token: string;
  /** The NetworkPolicies, Secrets and ConfigMaps it was given, as it keeps them. */
  networkPolicies: ObjectStore<NetworkPolicyJson>;
  secrets: ObjectStore<SecretJson>;
  configMaps: ObjectStore<ConfigMapJson>;
  close(): Promise<void>;
}

/**
 * A Kubernetes API server for the part of the API the kubernetes runtime uses (pods, their watch,
 * and exec and port-forward over WebSocket), speaking the real wire protocol so that @kubernetes/client-node runs
 * unchanged against it. Behind each pod is a real sandbox of `backend`. Plain HTTP on 127.0.0.1
 * with a bearer token, as there is no cluster (and no TLS) to test against here.
 */
export async function startKubeStandin(options: {
  backend: SandboxRuntime;
  /** How long an unpullable image (name contains "does-not-exist") shows ErrImagePull first. */
  pullBackOffMs?: number;
  /** How many events back a watch may resume from (the API server keeps a few minutes' worth). */
  eventWindow?: number;
  /** The address a running pod of that name shows as its status.podIP; 127.0.0.1 where it answers none. */
  podIp?: (name: string) => string | undefined;
}): Promise<KubeStandin> {
  const token = randomBytes(24).toString('base64url');
  const store = new PodStore({ backend: options.backend, pullBackOffMs: options.pullBackOffMs ?? 300,
    eventWindow: options.eventWindow ?? 1000,
    podIp: options.podIp ?? (() => undefined),
  });
  const openWatches = new Set<ServerResponse>();
  const networkPolicies = new ObjectStore<NetworkPolicyJson>(NETWORK_POLICY);
  const secrets = new ObjectStore<SecretJson>(SECRET);
  const configMaps = new ObjectStore<ConfigMapJson>(CONFIG_MAP);
  const objects = [networkPolicies, secrets, configMaps] as unknown as ObjectStore<ObjectJson>[];
  const wss = new WebSocketServer({ noServer: true, handleProtocols: chooseSubprotocol });
  // Port-forward speaks other subprotocols than exec (no v5), so it has a server of its own.
  const portForwardWss = new WebSocketServer({ noServer: true, handleProtocols: choosePortForwardSubprotocol });
  // Go's default header limit rather than Node's 16 KiB: an exec's argv and environment all
  // travel in its URL.
  const server = createServer({ maxHeaderSize: 1024 * 1024 }, (req, res) => void handleRest({ store, objects, token, openWatches }, req, res));
  server.on('upgrade', (req, socket, head: Buffer) => {
    if (POD_PORTFORWARD.test(new URL(req.url ?? '/', 'http://standin').pathname)) {
      handlePortForwardUpgrade({ store, backend: options.backend, token, wss: portForwardWss }, req, socket, head);
    } else handleExecUpgrade({ store, backend: options.backend, token, wss }, req, socket, head);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    // client-node refuses a plain-http server unless TLS verification is explicitly off.
    clusters: [{ name: 'standin', server: url, skipTLSVerify: true }],
    users: [{ name: 'standin', token }],
    contexts: [{ name: 'standin', cluster: 'standin', user: 'standin' }],
    currentContext: 'standin',
  });

  return {
    url,
    kubeConfig,
    token,
    networkPolicies,
    secrets,
    configMaps,
    async close() {
      for (const res of openWatches) res.end();
      for (const ws of [...wss.clients, ...portForwardWss.clients]) ws.terminate();
      await store.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      wss.close();
      portForwardWss.close();
    },
  };
}
