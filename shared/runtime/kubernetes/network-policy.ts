import { NetworkingV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1NetworkPolicy, type V1NetworkPolicyEgressRule, type V1NetworkPolicyPort, type V1Pod } from '@kubernetes/client-node';
import { describeApiError, httpStatusOf } from './api-errors.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, MANAGED_SELECTOR, ownedByPod, SANDBOX_ID_LABEL } from './names.ts';
import { BLOCKED_V4, BLOCKED_V6, withinFloor } from '../../network/floor.ts';
import type { NetworkPolicy } from '../../network/policy.ts';
import { addressRules, cidrWithin, egressMode } from '../../network/rules.ts';
import { GATEWAY_PORTS, policyAnnotation, type EgressGatewayOptions } from './egress-gateway.ts';

// A sandbox pod's egress on Kubernetes: the namespace denies every pod everything
// (deploy/kubernetes/base/sandbox-networkpolicy.yaml), and a sandbox whose policy opens any gets a
// NetworkPolicy of its own that adds what it opens, never the hard floor (shared/network/floor.ts),
// which each rule leaves out. It selects the pod by its sandbox id and is owned by it, so the
// cluster removes it with the pod; a change of policy replaces it, and `none` deletes it. The
// cluster's network plugin enforces it (docs/deploy.md). Where Paddock's egress gateway runs
// (egress-gateway.ts), the pod's DNS is the gateway's and names are reached through it: every
// sandbox's policy admits the gateway's DNS, one that opens any its proxy too, and none the
// cluster's DNS; the policy itself rides on it as an annotation, which the gateway reads.

const ALL_V4 = '0.0.0.0/0';
const ALL_V6 = '::/0';

/** The NetworkPolicy of a sandbox's pod. */
export function egressPolicyName(podName: string): string {
  return `${podName}-egress`;
}

/**
 * The sandbox's own NetworkPolicy; undefined for `none` without a gateway, which the namespace's
 * denial is (with one, `none` still reaches the gateway's DNS, which refuses every name at once).
 */
export function egressPolicyManifest(pod: Pick<V1Pod, 'metadata'>, sandboxId: string, policy: NetworkPolicy, gateway?: EgressGatewayOptions): V1NetworkPolicy | undefined {
  const mode = egressMode(policy);
  if (mode === 'none' && !gateway) return undefined;
  const podName = pod.metadata?.name ?? '';
  const egress: V1NetworkPolicyEgressRule[] =
    mode === 'none'
      ? []
      : mode === 'all'
        ? [
            { to: [ipBlock(ALL_V4), ipBlock(ALL_V6)] },
            // Names resolve through the cluster's DNS, as the `all` of the local runtime has slirp's.
            ...(gateway ? [] : [{ to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }], ports: bothProtocols(53) }]),
          ]
        : addressRules(policy).flatMap((rule) => {
            // A range wholly inside the floor opens nothing.
            if (withinFloor(rule.family, rule.cidr)) return [];
            return [{ to: [ipBlock(rule.cidr)], ...(rule.port === undefined ? {} : { ports: bothProtocols(rule.port) }) }];
          });
  if (gateway) {
    const ports: V1NetworkPolicyPort[] = [...bothProtocols(GATEWAY_PORTS.dns), ...(mode === 'none' ? [] : [{ protocol: 'TCP', port: GATEWAY_PORTS.http }, { protocol: 'TCP', port: GATEWAY_PORTS.https }])];
    egress.push({ to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': gateway.namespace } }, podSelector: { matchLabels: gateway.podLabels } }], ports });
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: egressPolicyName(podName),
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [SANDBOX_ID_LABEL]: sandboxId },
      ...(gateway ? { annotations: policyAnnotation(policy) } : {}),
      ...ownedByPod(podName, pod.metadata?.uid),
    },
    spec: {
      podSelector: { matchLabels: { [SANDBOX_ID_LABEL]: sandboxId } },
      policyTypes: ['Egress'],
      egress,
    },
  };
}

/** The range less every floor range inside it (a NetworkPolicy's `except` takes only those). */
function ipBlock(cidr: string): { ipBlock: { cidr: string; except?: string[] } } {
  const floor = cidr.includes(':') ? BLOCKED_V6 : BLOCKED_V4;
  const except = floor.filter((range) => range !== cidr && cidrWithin(range, cidr));
  return { ipBlock: { cidr, ...(except.length ? { except } : {}) } };
}

function bothProtocols(port: number): V1NetworkPolicyPort[] {
  return [
    { protocol: 'TCP', port },
    { protocol: 'UDP', port },
  ];
}

/** The NetworkPolicy calls the runtime makes, with NotFound and AlreadyExists turned into values. */
export class NetworkPolicyClient {
  readonly #api: NetworkingV1Api;
  readonly #namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.#api = kubeConfig.makeApiClient(NetworkingV1Api);
    this.#namespace = namespace;
  }

  /** Makes it, or replaces the one of its name. */
  async put(policy: V1NetworkPolicy): Promise<void> {
    const name = policy.metadata?.name ?? '';
    try {
      await this.#api.createNamespacedNetworkPolicy({ namespace: this.#namespace, body: policy });
      return;
    } catch (err) {
      if (httpStatusOf(err) !== 409) throw describeApiError(`creating network policy ${name}`, err);
    }
    try {
      await this.#api.replaceNamespacedNetworkPolicy({ name, namespace: this.#namespace, body: policy });
    } catch (err) {
      throw describeApiError(`replacing network policy ${name}`, err);
    }
  }

  /** The one of that name; undefined when there is none. */
  async get(name: string): Promise<V1NetworkPolicy | undefined> {
    try {
      return await this.#api.readNamespacedNetworkPolicy({ name, namespace: this.#namespace });
    } catch (err) {
      if (httpStatusOf(err) === 404) return undefined;
      throw describeApiError(`reading network policy ${name}`, err);
    }
  }

  /** Sets these annotations of it (a merge patch); false when there is none of that name. */
  async annotate(name: string, annotations: Record<string, string>): Promise<boolean> {
    try {
      await this.#api.patchNamespacedNetworkPolicy({ name, namespace: this.#namespace, body: { metadata: { annotations } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
      return true;
    } catch (err) {
      if (httpStatusOf(err) === 404) return false;
      throw describeApiError(`annotating network policy ${name}`, err);
    }
  }

  /** Every one Paddock made in the namespace. */
  async listManaged(): Promise<V1NetworkPolicy[]> {
    try {
      return (await this.#api.listNamespacedNetworkPolicy({ namespace: this.#namespace, labelSelector: MANAGED_SELECTOR })).items;
    } catch (err) {
      throw describeApiError('listing network policies', err);
    }
  }

  /** Removes it; nothing to do when it is not there. */
  async delete(name: string): Promise<void> {
    try {
      await this.#api.deleteNamespacedNetworkPolicy({ name, namespace: this.#namespace });
    } catch (err) {
      if (httpStatusOf(err) !== 404) throw describeApiError(`deleting network policy ${name}`, err);
    }
  }
}
