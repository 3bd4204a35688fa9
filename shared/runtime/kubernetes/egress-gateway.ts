import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import type { V1EnvVar, V1PodDNSConfig, V1Secret, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { BrokeredCredential } from '../../network/brokered.ts';
import type { NetworkPolicy } from '../../network/policy.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, ownedByPod, SANDBOX_ID_LABEL } from './names.ts';

// What the Kubernetes runtime and Paddock's egress gateway (gateway/) agree on. A sandbox pod's DNS
// is the gateway's, its NetworkPolicy admits the gateway (network-policy.ts), and it trusts the
// gateway's certificate authority from a ConfigMap the gateway publishes. The gateway knows a pod
// by its address, and reads what the runtime wrote of its sandbox: the policy as an annotation of
// the pod's NetworkPolicy, the brokered credentials in a Secret of the pod's, both owned by the
// pod. The sandbox has no service-account token: neither is anything it can read.

/** The gateway's pods' labels (deploy/kubernetes/components/egress-gateway/egress-gateway.yaml), which sandbox pods' NetworkPolicies admit. */
export const GATEWAY_POD_LABELS: Readonly<Record<string, string>> = { 'app.kubernetes.io/name': 'paddock', 'app.kubernetes.io/component': 'egress-gateway' };

/** The gateway's container ports (unprivileged); its Service maps 53, 80 and 443 onto them. */
export const GATEWAY_PORTS = { dns: 8053, http: 8080, https: 8443 } as const;

/** The annotation of a pod's NetworkPolicy that holds its sandbox's egress policy (JSON). */
export const POLICY_ANNOTATION = 'paddock.dev/egress-policy';
/**
 * The annotations of a pod's NetworkPolicy that count what the gateway refused the sandbox, one
 * per gateway replica (`refused.paddock.dev/<its pod's name>`): each replica writes its own, the
 * runtime's sweep adds them up, and a change of policy keeps them.
 */
export const REFUSED_ANNOTATION_PREFIX = 'refused.paddock.dev/';
/** The key of the credentials Secret's data: the brokered credentials (JSON). */
export const CREDENTIALS_KEY = 'credentials.json';

/** The ConfigMap of the sandboxes' namespace that holds what sandboxes trust, as the gateway publishes it. */
export const TRUST_CONFIG_MAP = 'paddock-egress-trust';
/** Its keys: the system's authorities with the egress's appended, and the egress's alone. */
export const TRUST_BUNDLE_KEY = 'ca-certificates.crt';
export const TRUST_CA_KEY = 'egress-ca.pem';
/** Where a sandbox finds them. */
const TRUST_DIR = '/etc/ssl/paddock';
/** Where Debian's, Ubuntu's and Alpine's programs look for authorities. */
const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

export interface EgressGatewayOptions {
  /** The gateway Service's cluster address: every sandbox's nameserver. */
  address: string;
  /** The namespace of the gateway's pods, and their labels, for the NetworkPolicy that admits them. */
  namespace: string;
  podLabels: Readonly<Record<string, string>>;
}

/** The Secret that holds a pod's brokered credentials. */
export function credentialsSecretName(podName: string): string {
  return `${podName}-egress-credentials`;
}

/** The pod's DNS: the gateway alone (a pod's DNS settings are fixed at its creation, whatever its policy becomes). */
export function gatewayDns(gateway: EgressGatewayOptions): { dnsPolicy: 'None'; dnsConfig: V1PodDNSConfig } {
  return { dnsPolicy: 'None', dnsConfig: { nameservers: [gateway.address], searches: [], options: [{ name: 'ndots', value: '1' }] } };
}

/** The egress's authority in the sandbox: the bundle where programs look, and the variables other clients read. */
export function gatewayTrust(): { volume: V1Volume; mounts: V1VolumeMount[]; env: V1EnvVar[] } {
  const bundle = `${TRUST_DIR}/${TRUST_BUNDLE_KEY}`;
  return {
    volume: { name: 'egress-trust', configMap: { name: TRUST_CONFIG_MAP } },
    mounts: [
      { name: 'egress-trust', mountPath: TRUST_DIR, readOnly: true },
      { name: 'egress-trust', mountPath: SYSTEM_BUNDLE, subPath: TRUST_BUNDLE_KEY, readOnly: true },
    ],
    env: [
      { name: 'NODE_EXTRA_CA_CERTS', value: `${TRUST_DIR}/${TRUST_CA_KEY}` },
      { name: 'SSL_CERT_FILE', value: bundle },
      { name: 'REQUESTS_CA_BUNDLE', value: bundle },
      { name: 'CURL_CA_BUNDLE', value: bundle },
      { name: 'GIT_SSL_CAINFO', value: bundle },
    ],
  };
}

/** The pod's credentials Secret, owned by the pod; only the gateway reads it. */
export function credentialsSecret(pod: { name: string; uid?: string }, sandboxId: string, credentials: readonly BrokeredCredential[]): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: credentialsSecretName(pod.name),
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [SANDBOX_ID_LABEL]: sandboxId },
      ...ownedByPod(pod.name, pod.uid),
    },
    data: { [CREDENTIALS_KEY]: Buffer.from(JSON.stringify(credentials)).toString('base64') },
  };
}

/** The policy as the NetworkPolicy's annotation holds it. */
export function policyAnnotation(policy: NetworkPolicy): Record<string, string> {
  return { [POLICY_ANNOTATION]: JSON.stringify(policy) };
}

/** The egress gateway Service's address: PADDOCK_EGRESS_GATEWAY as it is, or the address its name resolves to now. */
export async function gatewayAddress(setting: string): Promise<string> {
  if (isIPv4(setting)) return setting;
  try {
    return (await lookup(setting, { family: 4 })).address;
  } catch (err) {
    throw new Error(`PADDOCK_EGRESS_GATEWAY: ${setting} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/** What the gateway replicas refused the sandbox, from its NetworkPolicy's annotations. */
export function refusalsOf(annotations: Record<string, string> | undefined): number {
  let total = 0;
  for (const [key, value] of Object.entries(annotations ?? {})) {
    if (key.startsWith(REFUSED_ANNOTATION_PREFIX) && /^\d{1,15}$/.test(value)) total += Number(value);
  }
  return total;
}

/** Only the refusal counts of `annotations`. */
export function refusalAnnotations(annotations: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(annotations ?? {}).filter(([key]) => key.startsWith(REFUSED_ANNOTATION_PREFIX)));
}
