import { createHash } from 'node:crypto';
import { CoreV1Api, ListWatch, NetworkingV1Api, Watch, type KubeConfig, type KubernetesObject, type V1NetworkPolicy, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import { NetworkPolicy } from '../../../network/policy.ts';
import type { BrokeredCredential } from '../../../network/brokered.ts';
import type { InstalledPolicy } from '../../local/egress-filter.ts';
import type { PassingSandbox, SandboxesByAddress } from '../../pass-through.ts';
import { CREDENTIALS_KEY, credentialsSecretName, POLICY_ANNOTATION } from '../egress-gateway.ts';
import { egressPolicyName } from '../network-policy.ts';
import { MANAGED_SELECTOR, SANDBOX_ID_LABEL } from '../names.ts';

// Who is asking: the gateway knows a connection or a query by its source address, a sandbox pod's
// (a ClusterIP Service keeps it). The pod of that address, and what the runtime wrote of its
// sandbox (egress-gateway.ts): the policy on its NetworkPolicy, its brokered credentials in its
// Secret, both owned by that very pod. Each replica keeps all three kinds (Paddock's alone, by
// label) from a list and a watch of the API server: a change of policy or credentials is heard
// as it is made, and the API server answers one watch a kind, not a request a connection.
// Anything not (yet) known, or not owned by the pod, is a sandbox that reaches nothing.

export interface WatchedSandboxes extends SandboxesByAddress {
  stop(): Promise<void>;
}

/** The sandboxes of the namespace as the API server has them, once each kind is listed. */
export async function watchSandboxes(kubeConfig: KubeConfig, namespace: string): Promise<WatchedSandboxes> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const networking = kubeConfig.makeApiClient(NetworkingV1Api);
  const watch = new Watch(kubeConfig);
  const selector = { namespace, labelSelector: MANAGED_SELECTOR };
  const pods = new ListWatch<V1Pod>(`/api/v1/namespaces/${namespace}/pods`, watch, () => core.listNamespacedPod(selector), false, MANAGED_SELECTOR);
  const policies = new ListWatch<V1NetworkPolicy>(`/apis/networking.k8s.io/v1/namespaces/${namespace}/networkpolicies`, watch, () => networking.listNamespacedNetworkPolicy(selector), false, MANAGED_SELECTOR);
  const secrets = new ListWatch<V1Secret>(`/api/v1/namespaces/${namespace}/secrets`, watch, () => core.listNamespacedSecret(selector), false, MANAGED_SELECTOR);

  // Pods by address: a pod's address is set once it runs, and passes to another pod only after it ended.
  const byIp = new Map<string, Set<string>>();
  const ipOf = new Map<string, string>();
  const place = (pod: V1Pod) => {
    const name = pod.metadata?.name;
    if (!name) return;
    unplace(pod);
    const ip = pod.status?.podIP;
    if (!ip) return;
    ipOf.set(name, ip);
    byIp.set(ip, (byIp.get(ip) ?? new Set()).add(name));
  };
  const unplace = (pod: V1Pod) => {
    const name = pod.metadata?.name;
    const ip = name === undefined ? undefined : ipOf.get(name);
    if (!name || ip === undefined) return;
    ipOf.delete(name);
    const names = byIp.get(ip);
    names?.delete(name);
    if (names?.size === 0) byIp.delete(ip);
  };
  pods.on('add', place);
  pods.on('update', place);
  pods.on('delete', unplace);
  await Promise.all([pods.start(), policies.start(), secrets.start()]);

  // What was made of an object's version, kept: the policy and credentials parsed once a change.
  const made = new Map<string, { versions: string; sandbox: PassingSandbox | undefined }>();

  function byAddress(address: string): PassingSandbox | undefined {
    // An address passes from a pod that ended to a new one: only a running pod that is not going counts, and only one.
    const running = [...(byIp.get(address) ?? [])]
      .map((name) => pods.get(name, namespace))
      .filter((pod): pod is V1Pod => pod?.status?.phase === 'Running' && !pod.metadata?.deletionTimestamp && pod.status.podIP === address);
    if (running.length !== 1) return undefined;
    const pod = running[0]!;
    const name = pod.metadata!.name!;
    const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
    const networkPolicy = policies.get(egressPolicyName(name), namespace);
    const secret = secrets.get(credentialsSecretName(name), namespace);
    if (!id || !networkPolicy || !ownedBy(networkPolicy, pod)) return undefined;
    const versions = `${pod.metadata?.uid} ${networkPolicy.metadata?.resourceVersion} ${secret?.metadata?.resourceVersion ?? ''}`;
    const kept = made.get(name);
    if (kept?.versions === versions) return kept.sandbox;
    const sandbox = compose(id, networkPolicy, secret && ownedBy(secret, pod) ? secret : undefined);
    if (made.size >= 10_000) made.clear();
    made.set(name, { versions, sandbox });
    return sandbox;
  }

  return {
    byAddress: async (address) => byAddress(address),
    async stop() {
      await Promise.all([pods.stop(), policies.stop(), secrets.stop()]);
    },
  };
}

/** The sandbox as the pass-through and the resolver read it, from its NetworkPolicy and Secret. */
function compose(id: string, networkPolicy: V1NetworkPolicy, secret: V1Secret | undefined): PassingSandbox | undefined {
  const policy = parsePolicy(networkPolicy.metadata?.annotations?.[POLICY_ANNOTATION]);
  if (!policy) return undefined;
  const credentials = parseCredentials(secret?.data?.[CREDENTIALS_KEY]);
  const brokered = [...new Set(credentials.flatMap((c) => c.hosts))].sort();
  const installed: InstalledPolicy = { policy, tag: tagOf(policy, brokered), ...(brokered.length ? { brokered } : {}) };
  return { id, installed, credentials };
}

function ownedBy(object: KubernetesObject, pod: V1Pod): boolean {
  return object.metadata?.ownerReferences?.some((owner) => owner.uid === pod.metadata?.uid) ?? false;
}

function parsePolicy(text: string | undefined): NetworkPolicy | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = NetworkPolicy.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function parseCredentials(base64: string | undefined): BrokeredCredential[] {
  if (base64 === undefined) return [];
  try {
    const parsed = JSON.parse(Buffer.from(base64, 'base64').toString('utf8')) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (c): c is BrokeredCredential =>
        typeof c === 'object' && c !== null && Array.isArray(c.hosts) && c.hosts.every((h: unknown) => typeof h === 'string') && typeof c.header === 'string' && typeof c.value === 'string',
    );
  } catch {
    return [];
  }
}

/** A tag (1 to 2^31 - 1) that changes with the policy or the brokered hosts: the resolver keeps its answers by it. */
function tagOf(policy: NetworkPolicy, brokered: string[]): number {
  const digest = createHash('sha256').update(JSON.stringify([policy, brokered])).digest();
  return (digest.readUInt32BE(0) % 0x7ffffffe) + 1;
}
