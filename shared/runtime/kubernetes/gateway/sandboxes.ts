import { createHash } from 'node:crypto';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { NetworkPolicy } from '../../../network/policy.ts';
import type { BrokeredCredential } from '../../../network/brokered.ts';
import type { InstalledPolicy } from '../../local/egress-filter.ts';
import type { PassingSandbox, SandboxesByAddress } from '../../pass-through.ts';
import { CREDENTIALS_KEY, credentialsSecretName, POLICY_ANNOTATION } from '../egress-gateway.ts';
import { egressPolicyName, NetworkPolicyClient } from '../network-policy.ts';
import { SecretClient } from '../secrets.ts';
import { MANAGED_SELECTOR, SANDBOX_ID_LABEL } from '../names.ts';

// Who is asking: the gateway knows a connection or a query by its source address, a sandbox pod's
// (a ClusterIP Service keeps it). The pod of that address, and what the runtime wrote of its
// sandbox (egress-gateway.ts): the policy on its NetworkPolicy, its brokered credentials in its
// Secret, both owned by that very pod. Read from the API server and kept for a second, so that a
// change of policy or credentials holds within about that long; anything unreadable is a sandbox
// that reaches nothing.

/** How long what was read of an address holds. */
const KEPT_MS = 1000;
/** Addresses remembered at once; past it the memory starts again. */
const ADDRESSES_KEPT = 4096;


/** The running sandbox whose pod has the address; undefined for any other address. */
export function sandboxesFromCluster(kubeConfig: KubeConfig, namespace: string, options: { keptMs?: number } = {}): SandboxesByAddress {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const policies = new NetworkPolicyClient(kubeConfig, namespace);
  const secrets = new SecretClient(kubeConfig, namespace);
  const kept = new Map<string, { until: number; found: Promise<PassingSandbox | undefined> }>();
  const keptMs = options.keptMs ?? KEPT_MS;

  async function read(address: string): Promise<PassingSandbox | undefined> {
    const listed = await core.listNamespacedPod({ namespace, labelSelector: MANAGED_SELECTOR, fieldSelector: `status.podIP=${address}` });
    // An address passes from a pod that ended to a new one: only a running pod that is not going counts, and only one.
    const running = listed.items.filter((pod) => pod.status?.phase === 'Running' && !pod.metadata?.deletionTimestamp && pod.status.podIP === address);
    if (running.length !== 1) return undefined;
    const pod = running[0]!;
    const name = pod.metadata?.name;
    const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
    if (!name || !id) return undefined;
    const [networkPolicy, secret] = await Promise.all([policies.get(egressPolicyName(name)), secrets.get(credentialsSecretName(name))]);
    if (!networkPolicy || !ownedBy(networkPolicy.metadata, pod)) return undefined;
    const policy = parsePolicy(networkPolicy.metadata?.annotations?.[POLICY_ANNOTATION]);
    if (!policy) return undefined;
    const credentials = secret && ownedBy(secret.metadata, pod) ? parseCredentials(secret.data?.[CREDENTIALS_KEY]) : [];
    const brokered = [...new Set(credentials.flatMap((c) => c.hosts))].sort();
    const installed: InstalledPolicy = { policy, tag: tagOf(policy, brokered), ...(brokered.length ? { brokered } : {}) };
    return { id, installed, credentials };
  }

  return {
    byAddress(address) {
      const now = Date.now();
      const hit = kept.get(address);
      if (hit && hit.until > now) return hit.found;
      if (kept.size >= ADDRESSES_KEPT) kept.clear();
      const found = read(address).catch(() => undefined);
      kept.set(address, { until: now + keptMs, found });
      return found;
    },
  };
}

function ownedBy(metadata: { ownerReferences?: { uid: string }[] } | undefined, pod: V1Pod): boolean {
  return metadata?.ownerReferences?.some((owner) => owner.uid === pod.metadata?.uid) ?? false;
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
