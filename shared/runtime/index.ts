import { resolve } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { SandboxRuntime } from './types.ts';
import { createLocalRuntime } from './local/index.ts';
import type { KubernetesRuntimeOptions } from './kubernetes/index.ts';
import { GATEWAY_POD_LABELS, gatewayAddress } from './kubernetes/egress-gateway.ts';

export * from './types.ts';

/**
 * The runtime PADDOCK_RUNTIME names; a KubeConfig may be passed in (tests point it at the stand-in).
 * The Kubernetes client is loaded only for the Kubernetes runtime: it costs every process that
 * starts most of a second of CPU.
 */
export async function createRuntime(config: Config, log: Logger, options: { kubeConfig?: KubeConfig } = {}): Promise<SandboxRuntime> {
  if (config.PADDOCK_RUNTIME === 'kubernetes') {
    const { createKubernetesRuntime } = await import('./kubernetes/index.ts');
    let kubeConfig = options.kubeConfig;
    if (!kubeConfig) {
      const { KubeConfig } = await import('@kubernetes/client-node');
      kubeConfig = new KubeConfig();
      kubeConfig.loadFromDefault(); // KUBECONFIG, ~/.kube/config, or the in-cluster service account
    }
    return createKubernetesRuntime(kubernetesOptions(config, kubeConfig, log, config.PADDOCK_EGRESS_GATEWAY && (await gatewayAddress(config.PADDOCK_EGRESS_GATEWAY))));
  }
  return localRuntimeFrom(config, log);
}

/** The local runtime as the configuration sets it up. */
export function localRuntimeFrom(config: Config, log?: Logger): SandboxRuntime {
  return createLocalRuntime({
    dataDir: resolve(config.PADDOCK_DATA_DIR),
    memoryMb: config.PADDOCK_LOCAL_MEMORY_MB,
    pidsMax: config.PADDOCK_LOCAL_PIDS_MAX,
    cpus: config.PADDOCK_LOCAL_CPUS,
    sandboxesCpuWeight: config.PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT,
    allowUnlimited: config.PADDOCK_LOCAL_ALLOW_UNLIMITED,
    diskMb: config.PADDOCK_LOCAL_DISK_MB,
    diskInodes: config.PADDOCK_LOCAL_DISK_INODES,
    diskMbps: config.PADDOCK_LOCAL_DISK_MBPS,
    agent: config.PADDOCK_LOCAL_AGENT,
    deadlineGraceSeconds: config.PADDOCK_LOCAL_DEADLINE_GRACE_SECONDS,
    egressResolvers: config.PADDOCK_EGRESS_RESOLVERS,
    egressUpstreamCa: config.PADDOCK_EGRESS_UPSTREAM_CA,
    log,
  });
}

/**
 * The Kubernetes runtime's options as the configuration gives them (the deploy tests use it too),
 * with the egress gateway at `gateway` (its Service's address) where PADDOCK_EGRESS_GATEWAY is set.
 */
export function kubernetesOptions(config: Config, kubeConfig: KubeConfig, log?: Logger, gateway?: string): KubernetesRuntimeOptions {
  return {
    kubeConfig,
    namespace: config.PADDOCK_KUBE_NAMESPACE,
    defaultImage: config.PADDOCK_KUBE_DEFAULT_IMAGE,
    allowedImages: allowedImages(config),
    runtimeClassName: config.PADDOCK_KUBE_RUNTIME_CLASS,
    resources: {
      cpuRequest: config.PADDOCK_KUBE_CPU_REQUEST,
      cpuLimit: config.PADDOCK_KUBE_CPU_LIMIT,
      memoryRequest: config.PADDOCK_KUBE_MEMORY_REQUEST,
      memoryLimit: config.PADDOCK_KUBE_MEMORY_LIMIT,
    },
    deadlineGraceSeconds: config.PADDOCK_KUBE_DEADLINE_GRACE_SECONDS,
    ...(gateway ? { gateway: { address: gateway, namespace: config.PADDOCK_EGRESS_GATEWAY_NAMESPACE, podLabels: GATEWAY_POD_LABELS } } : {}),
    log,
  };
}

export function allowedImages(config: Config): string[] {
  return config.PADDOCK_KUBE_ALLOWED_IMAGES.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
