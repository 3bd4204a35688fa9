// deploy/kubernetes rendered with kustomize (the base and the example overlay) and every object
// validated against the Kubernetes schemas, with the NetworkPolicies the runtime adds per sandbox; then
// what the schemas cannot see: that the pieces fit each other and the code (Procfile commands,
// the configuration schema, the runtime's namespace, labels, verbs and pod resources).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  KubeConfig,
  type V1Container,
  type V1Deployment,
  type V1HorizontalPodAutoscaler,
  type V1Job,
  type V1LabelSelector,
  type V1LimitRange,
  type V1NetworkPolicy,
  type V1NetworkPolicyPeer,
  type V1PodDisruptionBudget,
  type V1PodTemplateSpec,
  type V1ResourceQuota,
  type V1Role,
  type V1RoleBinding,
  type V1Service,
} from '@kubernetes/client-node';
import { parseConfig, unknownPaddockVariables, type Role } from '../../shared/config.ts';
import { kubernetesOptions } from '../../shared/runtime/index.ts';
import { sandboxPodManifest } from '../../shared/runtime/kubernetes/index.ts';
import { egressPolicyManifest } from '../../shared/runtime/kubernetes/network-policy.ts';
import { GATEWAY_POD_LABELS, GATEWAY_PORTS, TRUST_CONFIG_MAP } from '../../shared/runtime/kubernetes/egress-gateway.ts';
import { parseGatewayConfig } from '../../workers/egress-gateway-config.ts';
import type { NetworkPolicy } from '../../shared/network/policy.ts';
import { describeViolations, restrictedViolations } from './pod-security.ts';
import {
  DEPLOY,
  ROOT,
  USABLE_SECRETS,
  findRenderer,
  parseEnvFile,
  render,
  validateObject,
  workingCopy,
  type KubeObject,
} from './manifests.ts';

const CONTROL_NS = 'paddock';
const SANDBOX_NS = 'paddock-sandboxes';

type RenderName = 'base' | 'example';
let rendered: Record<RenderName, KubeObject[]> | undefined;

/** The two renders, made once, on first use (the validator's own tests need none). */
function renders(): Record<RenderName, KubeObject[]> {
  rendered ??= renderAll();
  return rendered;
}

function renderAll(): Record<RenderName, KubeObject[]> {
  const renderer = findRenderer();
  const copy = workingCopy({});
  try {
    return {
      base: render(renderer, join(copy, 'base')),
      example: render(renderer, join(copy, 'overlays/example')),
    };
  } finally {
    rmSync(dirname(copy), { recursive: true, force: true });
  }
}

// ---- helpers --------------------------------------------------------------------------------

function find<T>(objects: KubeObject[], kind: string, name: string, namespace?: string): T {
  const found = objects.filter((o) => o.kind === kind && sameName(kind, o.metadata.name, name));
  const matching = namespace === undefined ? found : found.filter((o) => o.metadata.namespace === namespace);
  assert.equal(matching.length, 1, `expected one ${kind} ${name}, found ${matching.map((o) => o.metadata.name).join(', ') || 'none'}`);
  return matching[0] as unknown as T;
}

/** A name as written in the base; generated ConfigMaps and Secrets get a hash suffix. */
function sameName(kind: string, actual: string, name: string): boolean {
  if (actual === name) return true;
  return (kind === 'ConfigMap' || kind === 'Secret') && new RegExp(`^${name}-[a-z0-9]{10}$`).test(actual);
}

function ofKind<T>(objects: KubeObject[], kind: string): T[] {
  return objects.filter((o) => o.kind === kind) as unknown as T[];
}

/** Every pod template of the workloads (Deployments, Jobs), with where it comes from. */
function podTemplates(objects: KubeObject[]): { id: string; template: V1PodTemplateSpec; namespace: string }[] {
  const out: { id: string; template: V1PodTemplateSpec; namespace: string }[] = [];
  for (const o of objects) {
    if (o.kind === 'Deployment' || o.kind === 'Job') {
      const template = (o as unknown as V1Deployment | V1Job).spec?.template;
      assert.ok(template, `${o.kind} ${o.metadata.name} has no pod template`);
      out.push({ id: `${o.kind} ${o.metadata.name}`, template, namespace: o.metadata.namespace ?? '' });
    }
  }
  return out;
}

function selects(selector: V1LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = e.key in labels;
    const value = labels[e.key];
    if (e.operator === 'In' && !(has && e.values?.includes(value!))) return false;
    if (e.operator === 'NotIn' && has && e.values?.includes(value!)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

const PROCFILE = Object.fromEntries(
  readFileSync(join(ROOT, 'Procfile'), 'utf8')
    .split('\n')
    .filter((l) => l.includes(':'))
    .map((l) => [l.slice(0, l.indexOf(':')).trim(), l.slice(l.indexOf(':') + 1).trim()]),
) as Record<string, string>;

/** The Procfile role a container runs, from its command. */
function roleOf(container: V1Container): Role | 'egress-gateway' {
  const command = [...(container.command ?? []), ...(container.args ?? [])].join(' ');
  const role = Object.entries(PROCFILE).find(([, cmd]) => cmd === command)?.[0];
  assert.ok(role === 'web' || role === 'worker' || role === 'release' || role === 'egress-gateway', `container ${container.name} runs "${command}", no Procfile role`);
  return role;
}

function decode(object: KubeObject): Record<string, string> {
  const data = (object.data ?? {}) as Record<string, string>;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data)) out[k] = object.kind === 'Secret' ? Buffer.from(v, 'base64').toString('utf8') : v;
  for (const [k, v] of Object.entries((object.stringData ?? {}) as Record<string, string>)) out[k] = v;
  return out;
}

/** The environment a container gets, resolved against the rendered ConfigMaps and Secrets. */
function environmentOf(objects: KubeObject[], namespace: string, container: V1Container): Record<string, string> {
  const source = (kind: string, name: string) =>
    objects.find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace);
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    const kind = from.configMapRef ? 'ConfigMap' : 'Secret';
    const object = ref?.name ? source(kind, ref.name) : undefined;
    assert.ok(object || ref?.optional, `${container.name}: envFrom ${kind} ${ref?.name} is not in the rendered manifests`);
    if (object) Object.assign(env, decode(object));
  }
  for (const e of container.env ?? []) {
    if (e.value !== undefined) {
      env[e.name] = e.value;
      continue;
    }
    const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
    assert.ok(ref, `${container.name}: ${e.name} has neither a value nor a Secret or ConfigMap key`);
    const kind = e.valueFrom?.secretKeyRef ? 'Secret' : 'ConfigMap';
    const object = source(kind, ref.name ?? '');
    const value = object ? decode(object)[ref.key] : undefined;
    assert.ok(value !== undefined || ref.optional, `${container.name}: ${e.name} needs key ${ref.key} of ${kind} ${ref.name}, which the render lacks`);
    if (value !== undefined) env[e.name] = value;
  }
  return env;
}

function quantity(q: string | number | undefined): number {
  if (q === undefined) return NaN;
  const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(String(q));
  assert.ok(m, `not a quantity: ${q}`);
  const units: Record<string, number> = { '': 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
  const unit = units[m[2]!];
  assert.ok(unit !== undefined, `unknown unit in ${q}`);
  return Number(m[1]) * unit;
}

// IP addresses as big integers, for ipBlock checks.
function parseIp(ip: string): { v6: boolean; n: bigint } {
  if (!ip.includes(':')) {
    const parts = ip.split('.').map(Number);
    assert.ok(parts.length === 4 && parts.every((p) => p >= 0 && p <= 255), `bad IPv4 ${ip}`);
    return { v6: false, n: parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n) };
  }
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = parseIp(v4[1]!).n;
    text = `${text.slice(0, -v4[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headParts = head ? head.split(':') : [];
  const tailParts = tail ? tail.split(':') : [];
  const groups = tail === undefined ? headParts : [...headParts, ...Array(8 - headParts.length - tailParts.length).fill('0'), ...tailParts];
  assert.equal(groups.length, 8, `bad IPv6 ${ip}`);
  return { v6: true, n: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g || '0', 16)), 0n) };
}

function inCidr(ip: string, cidr: string): boolean {
  const [base, bitsText] = cidr.split('/');
  const a = parseIp(ip);
  const b = parseIp(base!);
  if (a.v6 !== b.v6) return false;
  const width = a.v6 ? 128n : 32n;
  const shift = width - BigInt(Number(bitsText));
  return a.n >> shift === b.n >> shift;
}

type Destination = { ip: string; port: number; protocol?: string } | { namespaceLabels: Record<string, string>; podLabels: Record<string, string>; port: number; protocol?: string };

/** Whether the NetworkPolicies let a pod with these labels, in this namespace, open this connection. */
function egressAllowed(objects: KubeObject[], namespace: string, podLabels: Record<string, string>, to: Destination): boolean {
  const policies = ofKind<V1NetworkPolicy>(objects, 'NetworkPolicy').filter(
    (p) => p.metadata?.namespace === namespace && selects(p.spec?.podSelector, podLabels) && (p.spec?.policyTypes ?? []).includes('Egress'),
  );
  if (policies.length === 0) return true; // not isolated
  const peerMatches = (peer: V1NetworkPolicyPeer): boolean => {
    if ('ip' in to) {
      if (!peer.ipBlock) return false; // pod and namespace selectors match pods, not outside addresses
      return inCidr(to.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((e) => inCidr(to.ip, e));
    }
    if (peer.ipBlock) return false;
    const nsOk = peer.namespaceSelector ? selects(peer.namespaceSelector, to.namespaceLabels) : to.namespaceLabels['kubernetes.io/metadata.name'] === namespace;
    const podOk = peer.podSelector ? selects(peer.podSelector, to.podLabels) : true;
    return nsOk && podOk;
  };
  return policies.some((p) =>
    (p.spec?.egress ?? []).some((rule) => {
      const peerOk = !rule.to || rule.to.length === 0 || rule.to.some(peerMatches);
      const portOk = !rule.ports || rule.ports.length === 0 || rule.ports.some((port) => (port.protocol ?? 'TCP') === (to.protocol ?? 'TCP') && (port.port === undefined || port.port === to.port));
      return peerOk && portOk;
    }),
  );
}

/** A sandbox's own NetworkPolicy where the runtime makes it (the client names the namespace in the request's path). */
function inSandboxNamespace(policy: V1NetworkPolicy): KubeObject {
  return { ...policy, metadata: { ...policy.metadata, namespace: SANDBOX_NS } } as KubeObject;
}

function ingressRules(objects: KubeObject[], namespace: string, podLabels: Record<string, string>): number {
  return ofKind<V1NetworkPolicy>(objects, 'NetworkPolicy')
    .filter((p) => p.metadata?.namespace === namespace && selects(p.spec?.podSelector, podLabels))
    .reduce((n, p) => n + (p.spec?.ingress?.length ?? 0), 0);
}

/** An address for the gateway's Service where a test has no cluster to resolve its name in. */
const GATEWAY_ADDRESS = '10.96.0.53';

/** The worker's sandbox pod, with the egress gateway when `gateway` (its Service's address stood in for). */
function sandboxPod(env: Record<string, string>, gateway = false) {
  const config = parseConfig(env, 'worker');
  return sandboxPodManifest(
    { id: 'sbx_0123456789abcdefghijklmn', accountId: 'acct_0123456789abcdefghijklmn', capSeconds: config.PADDOCK_SESSION_CAP_SECONDS },
    kubernetesOptions(config, new KubeConfig(), undefined, gateway ? GATEWAY_ADDRESS : undefined),
  );
}

function workerEnvironment(objects: KubeObject[]): Record<string, string> {
  const worker = find<V1Deployment>(objects, 'Deployment', 'paddock-worker', CONTROL_NS);
  return environmentOf(objects, CONTROL_NS, worker.spec!.template.spec!.containers[0]!);
}

// ---- the validator itself -------------------------------------------------------------------

describe('the schema validator', () => {
  const deployment = () => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x', namespace: 'n' },
    spec: {
      selector: { matchLabels: { a: 'b' } },
      template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80 }] }] } },
    },
  });

  test('accepts a valid object', async () => {
    assert.deepEqual(await validateObject(deployment()), []);
  });

  test('rejects a misspelt field, which the API server would drop silently', async () => {
    const d = deployment();
    Object.assign(d.spec.template.spec.containers[0]!, { readinesProbe: { httpGet: { path: '/', port: 80 } } });
    const problems = await validateObject(d);
    assert.ok(problems.some((p) => p.includes('readinesProbe') && p.includes('unknown field')), problems.join('\n'));
  });

  test('rejects a wrong type, a bad enum value and a missing required field', async () => {
    const d = deployment();
    Object.assign(d.spec.template.spec.containers[0]!.ports[0]!, { containerPort: 'eighty' });
    Object.assign(d.spec.template.spec, { restartPolicy: 'Sometimes' });
    Reflect.deleteProperty(d.spec, 'selector');
    const problems = (await validateObject(d)).join('\n');
    assert.match(problems, /containerPort must be integer/);
    assert.match(problems, /restartPolicy must be equal to one of the allowed values/);
    assert.match(problems, /must have required property '?selector'?/);
  });

  test('fails an object of a kind it has no schema for', async () => {
    const problems = await validateObject({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } });
    assert.match(problems.join('\n'), /no schema for example\.com\/v1 Widget/);
    const typo = await validateObject({ apiVersion: 'apps/v1', kind: 'Deployement', metadata: { name: 'w' } });
    assert.match(typo.join('\n'), /no schema/);
  });
});

// ---- rendering and schemas ------------------------------------------------------------------

describe('deploy/kubernetes renders and validates', () => {
  for (const name of ['base', 'example'] as const) {
    test(`${name}: every object is valid against the Kubernetes schemas`, async () => {
      const objects = renders()[name];
      assert.ok(objects.length >= 15, `only ${objects.length} objects rendered`);
      const problems = (await Promise.all(objects.map(validateObject))).flat();
      assert.deepEqual(problems, [], `invalid objects:\n${problems.join('\n')}`);
    });

    test(`${name}: objects are unique and every namespaced one names its namespace`, () => {
      const seen = new Set<string>();
      const clusterScoped = new Set(['Namespace']);
      for (const o of renders()[name]) {
        const key = `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
        assert.ok(!seen.has(key), `duplicate ${key}`);
        seen.add(key);
        if (clusterScoped.has(o.kind)) assert.equal(o.metadata.namespace, undefined, key);
        else assert.ok(o.metadata.namespace === CONTROL_NS || o.metadata.namespace === SANDBOX_NS, `${key}: namespace ${o.metadata.namespace}`);
      }
    });
  }

  test('the example overlay sets a real image: a registry, a tag, not latest', () => {
    for (const { id, template } of podTemplates(renders().example)) {
      for (const c of template.spec?.containers ?? []) {
        assert.match(c.image ?? '', /^[a-z0-9.-]+(:[0-9]+)?\/[^:]+:[A-Za-z0-9._-]+$/, `${id}: image ${c.image}`);
        assert.doesNotMatch(c.image ?? '', /:latest$/, `${id}: image ${c.image}`);
      }
    }
  });
});

// ---- how the pieces fit -----------------------------------------------------------------------

describe('the control plane', () => {
  test('both namespaces enforce Pod Security "restricted"', () => {
    for (const name of [CONTROL_NS, SANDBOX_NS]) {
      const labels = find<KubeObject>(renders().example, 'Namespace', name).metadata.labels ?? {};
      assert.equal(labels['pod-security.kubernetes.io/enforce'], 'restricted', name);
      assert.equal(labels['pod-security.kubernetes.io/enforce-version'], 'latest', name);
    }
  });

  test('every workload would be admitted under "restricted" and runs as the image user', () => {
    const templates = podTemplates(renders().example);
    assert.equal(templates.length, 4);
    for (const { id, template } of templates) {
      const violations = restrictedViolations(template);
      assert.deepEqual(violations, [], `${id} breaks Pod Security "restricted":\n${describeViolations(violations)}`);
      assert.equal(template.spec?.securityContext?.runAsUser, 10001, id);
      for (const c of template.spec?.containers ?? []) assert.equal(c.securityContext?.readOnlyRootFilesystem, true, `${id} ${c.name}`);
    }
  });

  test('each workload runs a Procfile role: the API web, the workers worker, the Job release, the gateway egress-gateway', () => {
    const roles = podTemplates(renders().example).map(({ id, template }) => `${id}: ${roleOf(template.spec!.containers[0]!)}`);
    assert.deepEqual(roles.sort(), ['Deployment paddock-api: web', 'Deployment paddock-egress-gateway: egress-gateway', 'Deployment paddock-worker: worker', 'Job paddock-migrate: release']);
  });

  test("each role's environment passes Paddock's configuration, with no unknown PADDOCK_ variable", () => {
    for (const { id, template, namespace } of podTemplates(renders().example)) {
      for (const c of template.spec?.containers ?? []) {
        const env = environmentOf(renders().example, namespace, c);
        const role = roleOf(c);
        assert.deepEqual(unknownPaddockVariables(env), [], id);
        // Least privilege: only the API holds the credentials' secrets, current or previous.
        const apiOnly = ['PADDOCK_JWT_SECRET', 'PADDOCK_SECRETS_KEY', 'PADDOCK_JWT_SECRET_PREVIOUS', 'PADDOCK_SECRETS_KEY_PREVIOUS'];
        if (role !== 'web') assert.ok(!apiOnly.some((name) => name in env), `${id} holds the API's secrets`);
        if (role === 'egress-gateway') {
          // No database, no Redis: it reads the cluster alone.
          assert.equal(parseGatewayConfig(env).PADDOCK_KUBE_NAMESPACE, SANDBOX_NS, id);
          assert.ok(!('DATABASE_URL' in env) && !('REDIS_URL' in env), `${id} holds the database's or Redis' URL`);
          continue;
        }
        const config = parseConfig(env, role);
        assert.equal(config.NODE_ENV, 'production', id);
        assert.equal(config.PADDOCK_RUNTIME, 'kubernetes', id);
        assert.equal(config.PADDOCK_KUBE_NAMESPACE, SANDBOX_NS, id);
        if (role === 'web') {
          assert.ok(config.PADDOCK_JWT_SECRET && config.PADDOCK_SECRETS_KEY, id);
          assert.deepEqual([config.PADDOCK_JWT_SECRET_PREVIOUS, config.PADDOCK_SECRETS_KEY_PREVIOUS], [
            [USABLE_SECRETS.PADDOCK_JWT_SECRET_PREVIOUS],
            [USABLE_SECRETS.PADDOCK_SECRETS_KEY_PREVIOUS],
          ], `${id}: the rotation variables`);
        }
      }
    }
  });

  test("secrets.env.example lists every secret the workloads read, and its placeholders cannot start the API", () => {
    const example = parseEnvFile(readFileSync(join(DEPLOY, 'overlays/example/secrets.env.example'), 'utf8'));
    assert.deepEqual(Object.keys(example).sort(), Object.keys(USABLE_SECRETS).sort());
    const secret = find<KubeObject>(renders().example, 'Secret', 'paddock-secrets', CONTROL_NS);
    for (const { template } of podTemplates(renders().example)) {
      for (const e of template.spec?.containers.flatMap((c) => c.env ?? []) ?? []) {
        if (e.valueFrom?.secretKeyRef) {
          assert.equal(e.valueFrom.secretKeyRef.name, secret.metadata.name);
          assert.ok(e.valueFrom.secretKeyRef.key in example, `${e.valueFrom.secretKeyRef.key} is not in secrets.env.example`);
        }
      }
    }
    const config = parseEnvFile(readFileSync(join(DEPLOY, 'base/config.env'), 'utf8'));
    assert.throws(() => parseConfig({ ...config, ...example }, 'web'), /PADDOCK_JWT_SECRET[\s\S]*PADDOCK_SECRETS_KEY|PADDOCK_SECRETS_KEY[\s\S]*PADDOCK_JWT_SECRET/);
  });

  test('the API: probes on /readyz and /healthz at its PORT, a Service, an autoscaler and a disruption budget', () => {
    const objects = renders().example;
    const api = find<V1Deployment>(objects, 'Deployment', 'paddock-api', CONTROL_NS);
    const pod = api.spec!.template;
    const container = pod.spec!.containers[0]!;
    const port = Number(environmentOf(objects, CONTROL_NS, container).PORT);
    const http = container.ports?.find((p) => p.containerPort === port);
    assert.ok(http?.name, `no named container port for PORT ${port}`);
    assert.equal(container.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(container.livenessProbe?.httpGet?.path, '/healthz');
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
      assert.ok(probe?.httpGet && [http.name, port].includes(probe.httpGet.port as string | number), 'probe on another port');
    }
    // The readiness check gives PostgreSQL and Redis 2 s each, in parallel.
    assert.ok((container.readinessProbe?.timeoutSeconds ?? 1) > 2);

    const service = find<V1Service>(objects, 'Service', 'paddock-api', CONTROL_NS);
    assert.ok(selects({ matchLabels: service.spec!.selector! }, pod.metadata!.labels!), 'the Service does not select the API pods');
    assert.ok(service.spec!.ports!.every((p) => p.targetPort === http.name || p.targetPort === port));

    const hpa = find<V1HorizontalPodAutoscaler>(objects, 'HorizontalPodAutoscaler', 'paddock-api', CONTROL_NS);
    assert.deepEqual(hpa.spec?.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'paddock-api' });
    assert.ok((hpa.spec?.minReplicas ?? 1) >= 2, 'fewer than two API replicas');
    assert.equal(api.spec?.replicas, undefined, 'the Deployment sets replicas, which every apply would reset under the autoscaler');
    assert.ok(container.resources?.requests?.cpu, 'CPU utilisation needs a CPU request');

    const pdb = find<V1PodDisruptionBudget>(objects, 'PodDisruptionBudget', 'paddock-api', CONTROL_NS);
    assert.ok(selects(pdb.spec?.selector, pod.metadata!.labels!), 'the PodDisruptionBudget does not select the API pods');
    assert.ok(!selects(pdb.spec?.selector, find<V1Deployment>(objects, 'Deployment', 'paddock-worker').spec!.template.metadata!.labels!));
  });

  test('termination grace covers the drain: preStop, the shutdown timeout and the exit margin', () => {
    const objects = renders().example;
    for (const name of ['paddock-api', 'paddock-worker']) {
      const deployment = find<V1Deployment>(objects, 'Deployment', name, CONTROL_NS);
      const spec = deployment.spec!.template.spec!;
      const container = spec.containers[0]!;
      const env = environmentOf(objects, CONTROL_NS, container);
      const config = parseConfig(env, roleOf(container) as Role);
      const preStop = Number(container.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
      // onShutdownSignal (shared/shutdown.ts) exits on its own 5 s after the timeout.
      const needed = preStop + config.PADDOCK_SHUTDOWN_TIMEOUT_SECONDS + 5;
      assert.ok((spec.terminationGracePeriodSeconds ?? 30) > needed, `${name}: grace ${spec.terminationGracePeriodSeconds} s, needs more than ${needed} s`);
      if (name === 'paddock-worker') {
        // A job in progress may wait this long for its pod; the drain must outlast it.
        assert.ok(config.PADDOCK_SHUTDOWN_TIMEOUT_SECONDS > config.PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS, 'workers cannot drain a create');
        assert.equal(container.livenessProbe?.httpGet?.path, '/healthz');
        const port = container.ports?.find((p) => p.containerPort === config.PADDOCK_WORKER_METRICS_PORT);
        assert.ok(port && [port.name, port.containerPort].includes(container.livenessProbe.httpGet.port as string | number));
        // The kubelet probes the pod's address, not its loopback.
        assert.equal(config.PADDOCK_WORKER_METRICS_HOST, '0.0.0.0', 'the worker\'s probes cannot reach a loopback listener');
      }
    }
  });

  test('the upgrade order of docs/deploy.md: the first apply selects the migration with what it needs, and no long-running workload', () => {
    // kubectl apply -k … -l 'app.kubernetes.io/component notin (api,worker,egress-gateway)'
    const first = renders().example.filter((o) => !['api', 'worker', 'egress-gateway'].includes(o.metadata.labels?.['app.kubernetes.io/component'] ?? ''));
    const has = (kind: string, name: string) => first.some((o) => o.kind === kind && sameName(kind, o.metadata.name, name));
    for (const [kind, name] of [
      ['Namespace', CONTROL_NS],
      ['Namespace', SANDBOX_NS],
      ['Job', 'paddock-migrate'],
      ['ServiceAccount', 'paddock-migrate'],
      ['ConfigMap', 'paddock-config'],
      ['Secret', 'paddock-secrets'],
    ] as const) {
      assert.ok(has(kind, name), `the first apply lacks ${kind} ${name}`);
    }
    assert.deepEqual(first.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name), []);
    const job = find<V1Job>(renders().example, 'Job', 'paddock-migrate', CONTROL_NS);
    assert.equal(job.spec?.template.spec?.automountServiceAccountToken, false, 'migrations need no Kubernetes credential');
  });
});

describe('access to the cluster', () => {
  test('nothing cluster-wide: no ClusterRole or ClusterRoleBinding, Roles only in the sandbox namespace', () => {
    const objects = renders().example;
    assert.deepEqual(objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding').map((o) => o.metadata.name), []);
    for (const o of objects.filter((x) => x.kind === 'Role' || x.kind === 'RoleBinding')) assert.equal(o.metadata.namespace, SANDBOX_NS, o.metadata.name);
  });

  test("workers may do exactly what the runtime does with pods; the API may only read them, exec and port-forward; both keep a sandbox's own NetworkPolicy", () => {
    const rules = (name: string) =>
      Object.fromEntries(
        (find<V1Role>(renders().example, 'Role', name, SANDBOX_NS).rules ?? []).flatMap((r) => {
          // NetworkPolicies are networking.k8s.io's; everything else the core group's.
          assert.deepEqual(r.apiGroups, r.resources?.includes('networkpolicies') ? ['networking.k8s.io'] : [''], `${name}: rules outside the core group`);
          assert.equal(r.resourceNames, undefined);
          return (r.resources ?? []).map((res) => [res, [...r.verbs].sort()]);
        }),
      );
    assert.deepEqual(rules('paddock-worker'), {
      pods: ['create', 'delete', 'get', 'list', 'watch'],
      'pods/exec': ['create', 'get'],
      networkpolicies: ['create', 'delete', 'get', 'list', 'update'],
      secrets: ['delete'],
    });
    assert.deepEqual(rules('paddock-api'), {
      pods: ['get'],
      'pods/exec': ['create', 'get'],
      'pods/portforward': ['create', 'get'],
      networkpolicies: ['create', 'delete', 'get', 'update'],
      secrets: ['create', 'delete', 'get', 'update'],
    });
    // The gateway reads what it needs to know a pod and its sandbox, and writes only what sandboxes trust.
    assert.deepEqual(rules('paddock-egress-gateway'), { pods: ['list', 'watch'], networkpolicies: ['list', 'patch', 'watch'], secrets: ['list', 'watch'], configmaps: ['create', 'get', 'update'] });
  });

  test("each Role is bound to the service account of the Deployment that needs it, and to nothing else", () => {
    const objects = renders().example;
    for (const [role, deployment] of [
      ['paddock-worker', 'paddock-worker'],
      ['paddock-api', 'paddock-api'],
      ['paddock-egress-gateway', 'paddock-egress-gateway'],
    ] as const) {
      const account = find<V1Deployment>(objects, 'Deployment', deployment, CONTROL_NS).spec!.template.spec!.serviceAccountName;
      const binding = find<V1RoleBinding>(objects, 'RoleBinding', role, SANDBOX_NS);
      assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role });
      assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: account, namespace: CONTROL_NS }]);
      find<KubeObject>(objects, 'ServiceAccount', account!, CONTROL_NS);
    }
  });
});

describe('the sandbox namespace', () => {
  test('the runtime creates its pods where the namespace, its Roles and its policies are', () => {
    const pod = sandboxPod(workerEnvironment(renders().example));
    assert.equal(pod.metadata?.namespace, SANDBOX_NS);
  });

  test('default deny: a sandbox pod reaches nothing and nothing reaches it', () => {
    const labels = sandboxPod(workerEnvironment(renders().example)).metadata!.labels!;
    for (const name of ['base', 'example'] as const) {
      const objects = renders()[name];
      assert.equal(ingressRules(objects, SANDBOX_NS, labels), 0, `${name}: ingress to sandboxes`);
      const policy = find<V1NetworkPolicy>(objects, 'NetworkPolicy', 'sandboxes-default-deny', SANDBOX_NS);
      assert.ok(selects(policy.spec?.podSelector, labels), 'the default deny does not select sandbox pods');
      assert.deepEqual([...(policy.spec?.policyTypes ?? [])].sort(), ['Egress', 'Ingress']);
      for (const ip of ['8.8.8.8', '169.254.169.254', '10.96.0.1', '2001:4860:4860::8888']) {
        assert.equal(egressAllowed(objects, SANDBOX_NS, labels, { ip, port: 443 }), false, `${name}: egress to ${ip}`);
      }
      const kubeDns = { namespaceLabels: { 'kubernetes.io/metadata.name': 'kube-system' }, podLabels: { 'k8s-app': 'kube-dns' }, port: 53, protocol: 'UDP' };
      assert.equal(egressAllowed(objects, SANDBOX_NS, labels, kubeDns), false, `${name}: DNS without opting in`);
    }
  });

  test("a sandbox whose egress is all: its own NetworkPolicy, valid, opens public addresses and the cluster's DNS; the cluster, private networks and metadata no", async () => {
    const pod = sandboxPod(workerEnvironment(renders().example));
    const labels = pod.metadata!.labels!;
    const own = inSandboxNamespace(egressPolicyManifest(pod, labels['paddock.dev/sandbox-id']!, { egress: 'all' })!);
    assert.deepEqual(await validateObject(own), []);
    const objects = [...renders().example, own];
    const allowed = (ip: string, port = 443) => egressAllowed(objects, SANDBOX_NS, labels, { ip, port });
    for (const ip of ['8.8.8.8', '1.1.1.1', '151.101.1.69', '2001:4860:4860::8888', '2606:4700::1111']) assert.ok(allowed(ip), `no egress to ${ip}`);
    for (const ip of [
      '169.254.169.254', // AWS, GCP, Azure, OpenStack metadata
      '100.100.100.200', // Alibaba Cloud metadata
      'fd00:ec2::254', // AWS metadata over IPv6
      '::ffff:169.254.169.254', // the same, IPv4-mapped
      '64:ff9b::a9fe:a9fe', // the same through NAT64
      '10.96.0.1', // a typical Service address
      '10.244.1.7', // a typical pod address
      '172.20.0.10',
      '192.168.1.1',
      '100.64.0.1',
      '127.0.0.1',
      '::1',
      'fe80::1',
    ]) {
      assert.equal(allowed(ip), false, `egress to ${ip}`);
    }
    const dns = (port: number, protocol: string, podLabels: Record<string, string> = { 'k8s-app': 'kube-dns' }) =>
      egressAllowed(objects, SANDBOX_NS, labels, { namespaceLabels: { 'kubernetes.io/metadata.name': 'kube-system' }, podLabels, port, protocol });
    assert.ok(dns(53, 'UDP') && dns(53, 'TCP'), 'names do not resolve');
    assert.equal(dns(443, 'TCP'), false, 'more than DNS reaches the DNS pods');
    assert.equal(dns(53, 'UDP', { 'k8s-app': 'metrics-server' }), false, 'DNS port open to other kube-system pods');
    assert.equal(ingressRules(objects, SANDBOX_NS, labels), 0, 'ingress to sandboxes');
  });

  test('a sandbox whose egress allows a list: what it lists, on its ports, and nothing of the floor it overlaps; no DNS', async () => {
    const pod = sandboxPod(workerEnvironment(renders().example));
    const labels = pod.metadata!.labels!;
    const own = inSandboxNamespace(egressPolicyManifest(pod, labels['paddock.dev/sandbox-id']!, { egress: { allow: ['198.51.100.0/24:443', '0.0.0.0/1', '[2001:db8::/32]:8443', '10.96.0.0/12'] } })!);
    assert.deepEqual(await validateObject(own), []);
    const objects = [...renders().example, own];
    const allowed = (ip: string, port: number) => egressAllowed(objects, SANDBOX_NS, labels, { ip, port });
    assert.ok(allowed('198.51.100.7', 443));
    assert.equal(allowed('198.51.100.7', 80), false, 'another port of a listed range');
    assert.ok(allowed('8.8.8.8', 80), 'a range without a port: every port');
    assert.ok(allowed('2001:db8::1', 8443));
    assert.equal(allowed('2001:db8::1', 443), false);
    for (const ip of ['203.0.113.9', '151.101.1.69', '2606:4700::1111']) assert.equal(allowed(ip, 443), false, `egress to ${ip}, which it does not list`);
    // Inside 0.0.0.0/1, or listed outright: the floor holds.
    for (const ip of ['10.96.0.1', '10.244.1.7', '100.100.100.200', '127.0.0.1']) assert.equal(allowed(ip, 443), false, `egress to ${ip}`);
    const kubeDns = { namespaceLabels: { 'kubernetes.io/metadata.name': 'kube-system' }, podLabels: { 'k8s-app': 'kube-dns' }, port: 53, protocol: 'UDP' };
    assert.equal(egressAllowed(objects, SANDBOX_NS, labels, kubeDns), false, 'DNS under allow');
    // none is the namespace's denial alone.
    assert.equal(egressPolicyManifest(pod, labels['paddock.dev/sandbox-id']!, { egress: 'none' }), undefined);
  });

  test('with the egress gateway: pods ask it for names, trust its authority, and reach it alone by name; the gateway is what the runtime admits', async () => {
    const objects = renders().example;
    const env = workerEnvironment(objects);
    // The component names the gateway's Service, which is in the namespace it says.
    const service = find<V1Service>(objects, 'Service', 'paddock-egress-gateway', CONTROL_NS);
    assert.equal(env.PADDOCK_EGRESS_GATEWAY, `${service.metadata!.name}.${service.metadata!.namespace}.svc`);
    assert.equal(parseConfig(env, 'worker').PADDOCK_EGRESS_GATEWAY_NAMESPACE, CONTROL_NS);
    const gateway = find<V1Deployment>(objects, 'Deployment', 'paddock-egress-gateway', CONTROL_NS);
    const gatewayLabels = gateway.spec!.template.metadata!.labels!;
    for (const [key, value] of Object.entries(GATEWAY_POD_LABELS)) assert.equal(gatewayLabels[key], value, key);
    // Its Service: 53 (both protocols), 80 and 443 onto the container's ports, as pods and policies know them.
    const containerPorts = Object.fromEntries(gateway.spec!.template.spec!.containers[0]!.ports!.map((p) => [p.name, p.containerPort]));
    const mapped = service.spec!.ports!.map((p) => `${p.protocol}/${p.port}->${containerPorts[String(p.targetPort)]}`).sort();
    assert.deepEqual(mapped, [`TCP/443->${GATEWAY_PORTS.https}`, `TCP/53->${GATEWAY_PORTS.dns}`, `TCP/80->${GATEWAY_PORTS.http}`, `UDP/53->${GATEWAY_PORTS.dns}`]);

    const pod = sandboxPod(env, true);
    assert.deepEqual(restrictedViolations({ metadata: pod.metadata, spec: pod.spec }), [], 'the pod with the gateway breaks Pod Security "restricted"');
    assert.equal(pod.spec!.dnsPolicy, 'None');
    assert.deepEqual(pod.spec!.dnsConfig!.nameservers, [GATEWAY_ADDRESS]);
    assert.ok(pod.spec!.volumes!.some((v) => v.configMap?.name === TRUST_CONFIG_MAP));
    const labels = pod.metadata!.labels!;
    const id = labels['paddock.dev/sandbox-id']!;
    const gatewayPeer = (port: number, protocol = 'TCP') => ({ namespaceLabels: { 'kubernetes.io/metadata.name': CONTROL_NS }, podLabels: gatewayLabels, port, protocol });
    const kubeDns = { namespaceLabels: { 'kubernetes.io/metadata.name': 'kube-system' }, podLabels: { 'k8s-app': 'kube-dns' }, port: 53, protocol: 'UDP' };
    const options = kubernetesOptions(parseConfig(env, 'worker'), new KubeConfig(), undefined, GATEWAY_ADDRESS).gateway!;
    const cases: [NetworkPolicy, boolean][] = [
      [{ egress: { allow: ['pypi.org', '198.51.100.0/24:443'] } }, true],
      [{ egress: 'all' }, true],
      [{ egress: 'none' }, false],
    ];
    for (const [policy, opens] of cases) {
      const own = inSandboxNamespace(egressPolicyManifest(pod, id, policy, options)!);
      assert.deepEqual(await validateObject(own), []);
      const all = [...objects, own];
      const allowed = (to: Destination) => egressAllowed(all, SANDBOX_NS, labels, to);
      const what = JSON.stringify(policy);
      assert.ok(allowed(gatewayPeer(GATEWAY_PORTS.dns, 'UDP')) && allowed(gatewayPeer(GATEWAY_PORTS.dns)), `${what}: the gateway's DNS`);
      assert.equal(allowed(gatewayPeer(GATEWAY_PORTS.https)), opens, `${what}: the gateway's 443`);
      assert.equal(allowed(gatewayPeer(GATEWAY_PORTS.http)), opens, `${what}: the gateway's 80`);
      assert.equal(allowed(gatewayPeer(22)), false, `${what}: another port of the gateway's`);
      assert.equal(allowed(kubeDns), false, `${what}: the cluster's DNS`);
      // Other pods of the control plane are no gateway.
      assert.equal(allowed({ ...gatewayPeer(GATEWAY_PORTS.https), podLabels: { 'app.kubernetes.io/name': 'paddock', 'app.kubernetes.io/component': 'api' } }), false, `${what}: the API's pods`);
      for (const ip of ['169.254.169.254', '10.96.0.1', '127.0.0.1']) assert.equal(allowed({ ip, port: 443 }), false, `${what}: egress to ${ip}`);
    }
  });

  test("the LimitRange admits the runtime's pods, and the quota admits as many as its pod count", () => {
    const objects = renders().example;
    const pod = sandboxPod(workerEnvironment(objects));
    const container = pod.spec!.containers[0]!;
    const limitRange = find<V1LimitRange>(objects, 'LimitRange', 'sandboxes', SANDBOX_NS);
    const item = limitRange.spec!.limits.find((l) => l.type === 'Container')!;
    // Raw YAML: the field is `default` (the client's model calls it `_default`).
    const defaults = (item as unknown as { default?: Record<string, string> }).default ?? {};
    for (const resource of ['cpu', 'memory']) {
      const request = quantity(container.resources?.requests?.[resource]);
      const limit = quantity(container.resources?.limits?.[resource]);
      assert.ok(limit <= quantity(item.max?.[resource]), `${resource} limit ${limit} over the LimitRange's max`);
      assert.ok(request >= quantity(item.min?.[resource] ?? '0'), `${resource} request under the LimitRange's min`);
    }
    // Effective per-pod figures once the LimitRange has filled in what the runtime leaves out.
    const effective: Record<string, number> = {};
    for (const resource of ['cpu', 'memory', 'ephemeral-storage']) {
      effective[`requests.${resource}`] = quantity(container.resources?.requests?.[resource] ?? item.defaultRequest?.[resource]);
      effective[`limits.${resource}`] = quantity(container.resources?.limits?.[resource] ?? defaults[resource]);
    }
    const quota = find<V1ResourceQuota>(objects, 'ResourceQuota', 'sandboxes', SANDBOX_NS);
    const hard = quota.spec!.hard!;
    const pods = quantity(hard.pods);
    assert.ok(pods >= 10, 'room for fewer than ten sandboxes');
    for (const [resource, perPod] of Object.entries(effective)) {
      assert.ok(Number.isFinite(perPod), `the sandbox pod has no ${resource}, and the quota requires one`);
      if (hard[resource] !== undefined) {
        assert.ok(quantity(hard[resource]) / perPod >= pods, `${resource}: the quota fits ${quantity(hard[resource]) / perPod} sandboxes, not ${pods}`);
      }
    }
  });
});
