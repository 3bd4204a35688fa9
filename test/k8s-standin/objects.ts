import { randomUUID } from 'node:crypto';
import { badRequest, StatusError } from './status.ts';
import type { StoreEvent } from './types.ts';
import { EventLog } from './event-log.ts';
import type { Watchable } from './watch.ts';

// Namespaced objects the API server keeps as they are given (NetworkPolicies, Secrets,
// ConfigMaps): created, replaced, read and deleted by name, and removed with the pod that owns
// them, as the garbage collector does. The stand-in has no network plugin and no kubelet that
// mounts them: tests read the objects it was given.

export interface ObjectJson {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string }[];
  };
}

export interface NetworkPolicyJson extends ObjectJson {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  spec: { podSelector: { matchLabels?: Record<string, string> }; policyTypes?: string[]; egress?: unknown[]; ingress?: unknown[] };
}

export interface SecretJson extends ObjectJson {
  apiVersion: 'v1';
  kind: 'Secret';
  type?: string;
  data?: Record<string, string>;
}

export interface ConfigMapJson extends ObjectJson {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  data?: Record<string, string>;
}

/** A kind the stand-in keeps: its names on the wire, its paths, and what it checks of a body beyond the metadata. */
interface Kind {
  kind: string;
  apiVersion: string;
  /** The resource as URLs and messages name it (`networkpolicies.networking.k8s.io`, `secrets`). */
  resource: string;
  collection: RegExp;
  item: RegExp;
  check(body: ObjectJson): string | undefined;
}

const NAME = /^[a-z0-9]([-a-z0-9]{0,251}[a-z0-9])?$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export const NETWORK_POLICY: Kind = {
  kind: 'NetworkPolicy',
  apiVersion: 'networking.k8s.io/v1',
  resource: 'networkpolicies.networking.k8s.io',
  collection: /^\/apis\/networking\.k8s\.io\/v1\/namespaces\/([^/]+)\/networkpolicies$/,
  item: /^\/apis\/networking\.k8s\.io\/v1\/namespaces\/([^/]+)\/networkpolicies\/([^/]+)$/,
  check: (body) => {
    const spec = (body as NetworkPolicyJson).spec;
    return !spec?.podSelector || typeof spec.podSelector !== 'object' ? 'spec.podSelector: Required value' : undefined;
  },
};

export const SECRET: Kind = {
  kind: 'Secret',
  apiVersion: 'v1',
  resource: 'secrets',
  collection: /^\/api\/v1\/namespaces\/([^/]+)\/secrets$/,
  item: /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/,
  check: (body) => {
    const data = (body as SecretJson).data ?? {};
    return Object.values(data).every((value) => typeof value === 'string' && BASE64.test(value)) ? undefined : 'data: illegal base64 data';
  },
};

export const CONFIG_MAP: Kind = {
  kind: 'ConfigMap',
  apiVersion: 'v1',
  resource: 'configmaps',
  collection: /^\/api\/v1\/namespaces\/([^/]+)\/configmaps$/,
  item: /^\/api\/v1\/namespaces\/([^/]+)\/configmaps\/([^/]+)$/,
  check: (body) => (Object.values((body as ConfigMapJson).data ?? {}).every((value) => typeof value === 'string') ? undefined : 'data: values must be strings'),
};

/** Watches may resume from a resourceVersion this many events back; older ones get 410 Expired. */
const EVENT_WINDOW = 1000;

export class ObjectStore<T extends ObjectJson> implements Watchable<T> {
  readonly kind: Kind;
  readonly #items = new Map<string, T>();
  readonly #log = new EventLog<T>(EVENT_WINDOW);

  constructor(kind: Kind) {
    this.kind = kind;
  }

  create(namespace: string, body: unknown): T {
    const object = this.#valid(namespace, body);
    const key = `${namespace}/${object.metadata.name}`;
    if (this.#items.has(key)) throw new StatusError(409, 'AlreadyExists', `${this.kind.resource} "${object.metadata.name}" already exists`);
    object.metadata.uid = randomUUID();
    return this.#put(key, object);
  }

  /** Replaces it; a body that names a resourceVersion must name the current one, as the API server's optimistic concurrency has it. */
  replace(namespace: string, name: string, body: unknown): T {
    const object = this.#valid(namespace, body);
    if (object.metadata.name !== name) throw badRequest('the name of the object does not match the name on the URL');
    const key = `${namespace}/${name}`;
    const existing = this.#items.get(key);
    if (!existing) throw this.#notFound(name);
    const asked = (body as ObjectJson).metadata.resourceVersion;
    if (asked && asked !== existing.metadata.resourceVersion) {
      throw new StatusError(409, 'Conflict', `Operation cannot be fulfilled on ${this.kind.resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    object.metadata.uid = existing.metadata.uid;
    return this.#put(key, object);
  }

  /** A JSON merge patch (RFC 7386), the one kind of patch the stand-in takes. */
  patch(namespace: string, name: string, body: unknown, contentType: string | undefined): T {
    if (contentType?.split(';')[0]?.trim() !== 'application/merge-patch+json') {
      throw new StatusError(415, 'UnsupportedMediaType', `the stand-in takes application/merge-patch+json patches only, not ${contentType}`);
    }
    const existing = this.get(namespace, name);
    const merged = mergePatch(existing, body) as T;
    merged.metadata.resourceVersion = existing.metadata.resourceVersion;
    return this.replace(namespace, name, merged);
  }

  get(namespace: string, name: string): T {
    const found = this.#items.get(`${namespace}/${name}`);
    if (!found) throw this.#notFound(name);
    return structuredClone(found);
  }

  delete(namespace: string, name: string): T {
    const found = this.get(namespace, name);
    this.#items.delete(`${namespace}/${name}`);
    this.#log.record('DELETED', found);
    return found;
  }

  list(namespace: string, matches: (object: T) => boolean = () => true): T[] {
    return [...this.#items.values()].filter((o) => o.metadata.namespace === namespace && matches(o)).map((o) => structuredClone(o));
  }

  get currentVersion(): number {
    return this.#log.currentVersion;
  }

  eventsSince(since: number): StoreEvent<T>[] | undefined {
    return this.#log.eventsSince(since);
  }

  subscribe(listener: (event: StoreEvent<T>) => void): () => void {
    return this.#log.subscribe(listener);
  }

  /** The garbage collector's part: what the deleted pod owned goes with it. */
  ownerGone(uid: string): void {
    for (const [key, object] of this.#items) {
      if (!object.metadata.ownerReferences?.some((owner) => owner.uid === uid)) continue;
      this.#items.delete(key);
      this.#log.record('DELETED', object);
    }
  }

  #put(key: string, object: T): T {
    const type = this.#items.has(key) ? 'MODIFIED' : 'ADDED';
    this.#items.set(key, object);
    this.#log.record(type, object);
    return structuredClone(object);
  }

  #valid(namespace: string, body: unknown): T {
    const object = structuredClone(body) as T;
    if (object?.kind !== this.kind.kind || object.apiVersion !== this.kind.apiVersion) throw badRequest(`not a ${this.kind.apiVersion} ${this.kind.kind}`);
    if (!object.metadata || typeof object.metadata.name !== 'string' || !NAME.test(object.metadata.name)) throw this.#invalid('metadata.name: a lowercase RFC 1123 subdomain is required');
    const problem = this.kind.check(object);
    if (problem) throw this.#invalid(problem);
    object.metadata.namespace = namespace;
    return object;
  }

  #notFound(name: string): StatusError {
    return new StatusError(404, 'NotFound', `${this.kind.resource} "${name}" not found`);
  }

  #invalid(message: string): StatusError {
    return new StatusError(422, 'Invalid', `${this.kind.kind} is invalid: ${message}`);
  }
}

export type NetworkPolicyStore = ObjectStore<NetworkPolicyJson>;

/** RFC 7386: objects merged key by key, null removing one, anything else replacing. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}
