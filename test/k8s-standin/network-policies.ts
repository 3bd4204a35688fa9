import { randomUUID } from 'node:crypto';
import { badRequest, StatusError } from './status.ts';

// NetworkPolicies (networking.k8s.io/v1) as the API server keeps them: created, replaced, read and
// deleted by name, and removed with the pod that owns them, as the garbage collector does. The
// stand-in has no network plugin: tests read the objects it was given.

export const NETWORK_POLICY_COLLECTION = /^\/apis\/networking\.k8s\.io\/v1\/namespaces\/([^/]+)\/networkpolicies$/;
export const NETWORK_POLICY = /^\/apis\/networking\.k8s\.io\/v1\/namespaces\/([^/]+)\/networkpolicies\/([^/]+)$/;

export interface NetworkPolicyJson {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string; labels?: Record<string, string>; ownerReferences?: { kind: string; name: string; uid: string }[] };
  spec: { podSelector: { matchLabels?: Record<string, string> }; policyTypes?: string[]; egress?: unknown[]; ingress?: unknown[] };
}

const NAME = /^[a-z0-9]([-a-z0-9]{0,251}[a-z0-9])?$/;

export class NetworkPolicyStore {
  readonly #items = new Map<string, NetworkPolicyJson>();
  #version = 0;

  create(namespace: string, body: unknown): NetworkPolicyJson {
    const policy = this.#valid(namespace, body);
    const key = `${namespace}/${policy.metadata.name}`;
    if (this.#items.has(key)) throw new StatusError(409, 'AlreadyExists', `networkpolicies.networking.k8s.io "${policy.metadata.name}" already exists`);
    policy.metadata.uid = randomUUID();
    return this.#put(key, policy);
  }

  replace(namespace: string, name: string, body: unknown): NetworkPolicyJson {
    const policy = this.#valid(namespace, body);
    if (policy.metadata.name !== name) throw badRequest('the name of the object does not match the name on the URL');
    const key = `${namespace}/${name}`;
    const existing = this.#items.get(key);
    if (!existing) throw notFound(name);
    policy.metadata.uid = existing.metadata.uid;
    return this.#put(key, policy);
  }

  get(namespace: string, name: string): NetworkPolicyJson {
    const found = this.#items.get(`${namespace}/${name}`);
    if (!found) throw notFound(name);
    return found;
  }

  delete(namespace: string, name: string): NetworkPolicyJson {
    const found = this.get(namespace, name);
    this.#items.delete(`${namespace}/${name}`);
    return found;
  }

  list(namespace: string): NetworkPolicyJson[] {
    return [...this.#items.values()].filter((p) => p.metadata.namespace === namespace);
  }

  /** The garbage collector's part: what the deleted pod owned goes with it. */
  ownerGone(uid: string): void {
    for (const [key, policy] of this.#items) {
      if (policy.metadata.ownerReferences?.some((owner) => owner.uid === uid)) this.#items.delete(key);
    }
  }

  #put(key: string, policy: NetworkPolicyJson): NetworkPolicyJson {
    policy.metadata.resourceVersion = String(++this.#version);
    this.#items.set(key, policy);
    return policy;
  }

  #valid(namespace: string, body: unknown): NetworkPolicyJson {
    const policy = structuredClone(body) as NetworkPolicyJson;
    if (policy?.kind !== 'NetworkPolicy' || policy.apiVersion !== 'networking.k8s.io/v1') throw badRequest('not a networking.k8s.io/v1 NetworkPolicy');
    if (!policy.metadata || typeof policy.metadata.name !== 'string' || !NAME.test(policy.metadata.name)) throw invalid('metadata.name: a lowercase RFC 1123 subdomain is required');
    if (!policy.spec?.podSelector || typeof policy.spec.podSelector !== 'object') throw invalid('spec.podSelector: Required value');
    policy.metadata.namespace = namespace;
    return policy;
  }
}

function notFound(name: string): StatusError {
  return new StatusError(404, 'NotFound', `networkpolicies.networking.k8s.io "${name}" not found`);
}

function invalid(message: string): StatusError {
  return new StatusError(422, 'Invalid', `NetworkPolicy is invalid: ${message}`);
}
