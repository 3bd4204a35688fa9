import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawn } from 'node:child_process';
import { createKubernetesRuntime } from '../../shared/runtime/kubernetes/index.ts';
import { GATEWAY_POD_LABELS } from '../../shared/runtime/kubernetes/egress-gateway.ts';
import { ensureEgressCa } from '../../shared/runtime/local/egress-ca.ts';
import type { SandboxRuntime } from '../../shared/runtime/types.ts';
import { startStandinFixture, type StandinFixture } from './fixture.ts';

// The Kubernetes egress gateway as deployed (workers/egress-gateway.ts), run on this host for
// the gateway's test and benchmark: the stand-in (whose pods show `podAddress`), the Kubernetes
// runtime on it with the gateway at `address`, an egress authority of its own, and the gateway
// process listening on `address`, ports 53, 80 and 443 as its Service shows them to pods.

const ROOT = resolve(import.meta.dirname, '../..');
export const GATEWAY_NAMESPACE = 'paddock-sandboxes';

export interface GatewayFixture {
  fixture: StandinFixture;
  runtime: SandboxRuntime;
  /** The egress authority's certificate (PEM file), which pods trust. */
  egressCa: string;
  /** The gateway's pid. */
  pid: number;
  /** What the gateway printed. */
  output(): string;
  close(): Promise<void>;
}

export async function startGatewayFixture(options: {
  /** The address the stand-in gives every running pod. */
  podAddress: string;
  /** Where the gateway listens, and what pods know it by. */
  address: string;
  /** Its upstream DNS server (PADDOCK_EGRESS_RESOLVERS), and an authority it trusts upstream. */
  resolvers: string;
  upstreamCa: string;
  /** Node's flags for the gateway (a benchmark's `--cpu-prof`). */
  nodeFlags?: string[];
}): Promise<GatewayFixture> {
  const work = mkdtempSync(join(tmpdir(), 'paddock-gateway-'));
  const fixture = await startStandinFixture({ podIp: () => options.podAddress });
  const runtime = createKubernetesRuntime({
    kubeConfig: fixture.standin.kubeConfig,
    namespace: GATEWAY_NAMESPACE,
    defaultImage: 'docker.io/library/debian:bookworm-slim',
    allowedImages: [],
    resources: { cpuRequest: '250m', cpuLimit: '1', memoryRequest: '256Mi', memoryLimit: '1Gi' },
    deadlineGraceSeconds: 120,
    gateway: { address: options.address, namespace: 'paddock', podLabels: GATEWAY_POD_LABELS },
  });
  const ca = await ensureEgressCa({ root: work, openssl: 'openssl', lockPrefix: work, deadline: Date.now() + 30_000 });
  const kubeconfig = join(work, 'kubeconfig.json');
  writeFileSync(kubeconfig, fixture.standin.kubeConfig.exportConfig(), { mode: 0o600 });
  const gateway = spawn(process.execPath, [...(options.nodeFlags ?? []), '--import', join(ROOT, 'test/helpers/die-with-parent.ts'), join(ROOT, 'workers/egress-gateway.ts')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      KUBECONFIG: kubeconfig,
      PADDOCK_LOG_LEVEL: 'warn',
      PADDOCK_KUBE_NAMESPACE: GATEWAY_NAMESPACE,
      PADDOCK_EGRESS_GATEWAY: options.address,
      PADDOCK_EGRESS_GATEWAY_LISTEN: options.address,
      PADDOCK_EGRESS_GATEWAY_PORTS: '53,80,443',
      PADDOCK_EGRESS_RESOLVERS: options.resolvers,
      PADDOCK_EGRESS_UPSTREAM_CA: options.upstreamCa,
      PADDOCK_EGRESS_CA_DIR: join(work, 'egress-ca'),
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  gateway.channel?.unref();
  let output = '';
  for (const stream of [gateway.stdout!, gateway.stderr!]) stream.on('data', (chunk: Buffer) => (output += String(chunk)));
  const close = async () => {
    if (gateway.exitCode === null && gateway.signalCode === null) {
      gateway.kill('SIGTERM');
      await once(gateway, 'exit');
    }
    await runtime.close();
    await fixture.close();
    rmSync(work, { recursive: true, force: true });
  };
  try {
    await listening(options.address, 443, () => output);
  } catch (err) {
    await close();
    throw err;
  }
  return { fixture, runtime, egressCa: ca.cert, pid: gateway.pid!, output: () => output, close };
}

/** Resolves once something accepts connections there (the gateway, started). */
async function listening(address: string, port: number, said: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const up = await new Promise<boolean>((done) => {
      const socket = connect({ host: address, port }, () => {
        socket.destroy();
        done(true);
      });
      socket.on('error', () => done(false));
    });
    if (up) return;
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`the gateway did not listen on ${address}:${port}: ${said()}`);
}
