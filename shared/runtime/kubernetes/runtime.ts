import type { Duplex } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import {
  PermanentRuntimeError,
  SandboxGoneError,
  type ExecRequest,
  type ExecResult,
  type TerminalRequest,
  type TerminalSession,
  type EgressSweep,
  type RuntimeSandbox,
  type SandboxRuntime,
  type SandboxSpec,
  type PortReads,
} from '../types.ts';
import { execInPod } from './exec.ts';
import { openPortInPod } from './port-forward.ts';
import { terminalInPod } from './terminal.ts';
import { sandboxPodManifest } from './manifest.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, podNameFor, SANDBOX_ID_LABEL } from './names.ts';
import { chooseImage, type KubernetesRuntimeOptions } from './options.ts';
import { sandboxFromPod, startupVerdict } from './pod-state.ts';
import { PodClient } from './pods.ts';
import { egressPolicyManifest, egressPolicyName, NetworkPolicyClient } from './network-policy.ts';
import { SecretClient } from './secrets.ts';
import { CREDENTIALS_KEY, credentialsSecret, credentialsSecretName, refusalAnnotations, refusalsOf } from './egress-gateway.ts';
import type { BrokeredCredential } from '../../network/brokered.ts';
import { NO_EGRESS, type NetworkPolicy } from '../../network/policy.ts';
import { egressMode } from '../../network/rules.ts';
import { waitForPod, WaitTimeoutError, type Decision } from './wait.ts';

const DEFAULT_CREATE_TIMEOUT_MS = 60_000;
const DESTROY_TIMEOUT_MS = 60_000;
// The keep-alive shell exits on TERM at once; a second is plenty and keeps destroy quick.
const DELETE_GRACE_SECONDS = 1;

/** One pod per sandbox, through the Kubernetes API (KUBECONFIG or the in-cluster account). */
export function createKubernetesRuntime(options: KubernetesRuntimeOptions): SandboxRuntime {
  const pods = new PodClient(options.kubeConfig, options.namespace);
  const networkPolicies = new NetworkPolicyClient(options.kubeConfig, options.namespace);
  const secrets = new SecretClient(options.kubeConfig, options.namespace);
  const gateway = options.gateway;
  const log = options.log;
  // close() aborts every wait in progress, so a shutting-down worker is not held for a minute.
  const closing = new AbortController();

  async function create(spec: SandboxSpec, createOptions?: { timeoutMs?: number }): Promise<RuntimeSandbox> {
    const manifest = sandboxPodManifest(spec, options);
    const name = manifest.metadata?.name ?? '';
    const timeoutMs = createOptions?.timeoutMs ?? DEFAULT_CREATE_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    const created = await pods.create(manifest);
    log?.debug({ sandboxId: spec.id, pod: name, created }, created ? 'pod created' : 'pod exists; waiting for it');
    // Until its own policy is in, the pod has the namespace's: no egress at all.
    if (gateway || egressMode(spec.network ?? NO_EGRESS) !== 'none') await applyNetwork(spec.id, name, spec.network ?? NO_EGRESS);
    try {
      return await waitForPod(options.kubeConfig, pods, name, deadline, untilRunning(spec), closing.signal);
    } catch (err) {
      if (err instanceof WaitTimeoutError) {
        throw new Error(`sandbox ${spec.id} did not start within ${timeoutMs / 1000}s (${err.lastSeen})`);
      }
      throw err;
    }
  }

  /** The pod's own NetworkPolicy made to say `policy` (owned by the pod), or removed for none. */
  async function applyNetwork(id: string, name: string, policy: NetworkPolicy): Promise<void> {
    const pod = await pods.read(name);
    if (!pod) throw new SandboxGoneError(`no sandbox ${id}`);
    const manifest = egressPolicyManifest(pod, id, policy, gateway);
    if (manifest && gateway) {
      // What the gateway counted so far stays with the policy that replaces this one.
      const counted = refusalAnnotations((await networkPolicies.get(manifest.metadata!.name!))?.metadata?.annotations);
      manifest.metadata!.annotations = { ...manifest.metadata!.annotations, ...counted };
    }
    if (manifest) await networkPolicies.put(manifest);
    else await networkPolicies.delete(egressPolicyName(name));
  }

  /** The sandbox's running pod's name; rejects with SandboxGoneError otherwise. */
  async function runningPod(id: string): Promise<V1Pod & { metadata: { name: string } }> {
    const name = podNameFor(id);
    if (name === undefined) throw new SandboxGoneError(`no sandbox ${id}`);
    const pod = await pods.read(name);
    if (!pod || pod.metadata?.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY || pod.metadata.deletionTimestamp || pod.status?.phase !== 'Running') {
      throw new SandboxGoneError(`sandbox ${id} is not running`);
    }
    return pod as V1Pod & { metadata: { name: string } };
  }

  async function setNetwork(id: string, policy: NetworkPolicy): Promise<void> {
    const pod = await runningPod(id);
    await applyNetwork(id, pod.metadata.name, policy);
  }

  /**
   * The credentials in the pod's own Secret (owned by it), which the gateway alone reads; none: no
   * Secret. Sent before every program starts, so a Secret that holds them already is left alone.
   */
  async function broker(id: string, credentials: readonly BrokeredCredential[]): Promise<void> {
    const pod = await runningPod(id);
    const name = credentialsSecretName(pod.metadata.name);
    if (credentials.length === 0) return secrets.delete(name);
    const wanted = credentialsSecret({ name: pod.metadata.name, uid: pod.metadata.uid }, id, credentials);
    const current = await secrets.get(name);
    const owned = current?.metadata?.ownerReferences?.some((owner) => owner.uid === pod.metadata.uid);
    if (owned && current?.data?.[CREDENTIALS_KEY] === wanted.data?.[CREDENTIALS_KEY]) return;
    await secrets.put(wanted);
  }

  /** What the egress gateway refused each sandbox, from its NetworkPolicy; credentials live in Secrets, which never die with a process. */
  async function sweepEgress(): Promise<EgressSweep> {
    const refused = new Map<string, number>();
    for (const policy of await networkPolicies.listManaged()) {
      const id = policy.metadata?.labels?.[SANDBOX_ID_LABEL];
      if (id) refused.set(id, refusalsOf(policy.metadata?.annotations));
    }
    return { refused, uncredentialed: [] };
  }

  async function destroy(id: string): Promise<void> {
    const name = podNameFor(id);
    if (name === undefined) return;
    // Owned by the pod, so the cluster removes it too; removed here as well, for a cluster whose
    // garbage collector lags, and so that the pod's end is its network's at once.
    await networkPolicies.delete(egressPolicyName(name));
    if (gateway) await secrets.delete(credentialsSecretName(name));
    if (!(await pods.delete(name, DELETE_GRACE_SECONDS))) return;
    const gone = (pod: V1Pod | undefined): Decision<void> =>
      pod ? { done: false, detail: `terminating, phase ${pod.status?.phase ?? 'unknown'}` } : { done: true, value: undefined };
    try {
      await waitForPod(options.kubeConfig, pods, name, Date.now() + DESTROY_TIMEOUT_MS, gone, closing.signal);
    } catch (err) {
      if (err instanceof WaitTimeoutError) throw new Error(`pod ${name} was not gone within ${DESTROY_TIMEOUT_MS / 1000}s`);
      throw err;
    }
    log?.debug({ sandboxId: id, pod: name }, 'pod deleted');
  }

  async function get(id: string): Promise<RuntimeSandbox | undefined> {
    const name = podNameFor(id);
    if (name === undefined) return undefined;
    const pod = await pods.read(name);
    // A pod of that name that Paddock did not make is none of its business.
    if (!pod || pod.metadata?.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) return undefined;
    return sandboxFromPod(pod);
  }

  async function list(): Promise<RuntimeSandbox[]> {
    const all = await pods.listManaged();
    return all.map(sandboxFromPod).filter((s): s is RuntimeSandbox => s !== undefined);
  }

  async function exec(id: string, request: ExecRequest): Promise<ExecResult> {
    const name = podNameFor(id);
    if (name === undefined) throw new SandboxGoneError(`no sandbox ${id}`);
    return execInPod({ kubeConfig: options.kubeConfig, pods, log }, name, request);
  }

  async function terminal(id: string, request: TerminalRequest): Promise<TerminalSession> {
    const name = podNameFor(id);
    if (name === undefined) throw new SandboxGoneError(`no sandbox ${id}`);
    try {
      return await terminalInPod({ kubeConfig: options.kubeConfig, pods, log }, name, request);
    } catch (err) {
      // The upgrade refused: the pod is gone, or not running.
      const pod = await pods.read(name).catch(() => undefined);
      if (!pod || pod.status?.phase !== 'Running') throw new SandboxGoneError(`sandbox ${id} is not running`);
      throw err;
    }
  }

  async function openPort(id: string, port: number, portOptions?: { signal?: AbortSignal; reads?: PortReads }): Promise<Duplex> {
    const name = podNameFor(id);
    if (name === undefined) throw new SandboxGoneError(`no sandbox ${id}`);
    const stream = await openPortInPod({ kubeConfig: options.kubeConfig, pods, log }, name, port, portOptions?.signal);
    // The WebSocket's frames hold the bytes already: its chunks are handed on as they are.
    const reads = portOptions?.reads;
    if (reads) stream.on('data', (chunk: Buffer) => reads.take(chunk) || stream.pause());
    return stream;
  }

  return {
    name: 'kubernetes',
    defaultImage: options.defaultImage,
    // Names and brokered credentials need Paddock's egress gateway in the cluster (docs/deploy.md):
    // without it, the egress is the cluster's network plugin alone, and nothing of Paddock's sees a request.
    egressByName: gateway !== undefined,
    egressBrokering: gateway !== undefined,
    ...(gateway ? { broker, sweepEgress } : {}),
    resolveImage: (requested) => chooseImage(requested, options),
    terminal,
    openPort,
    setNetwork,
    create,
    destroy,
    get,
    list,
    exec,
    async close() {
      closing.abort(new Error('the kubernetes runtime is closed'));
    },
  };
}

function untilRunning(spec: SandboxSpec): (pod: V1Pod | undefined) => Decision<RuntimeSandbox> {
  return (pod) => {
    const verdict = startupVerdict(pod);
    switch (verdict.kind) {
      case 'ready':
        return { done: true, value: { id: spec.id, accountId: spec.accountId, status: 'running' } };
      case 'hopeless':
        throw new PermanentRuntimeError(verdict.reason);
      case 'gone':
        throw new Error(`sandbox ${spec.id} cannot start: ${verdict.detail}`);
      case 'starting':
        return { done: false, detail: verdict.detail };
    }
  };
}
