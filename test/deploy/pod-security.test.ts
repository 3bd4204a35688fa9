// The sandbox pod the Kubernetes runtime creates must be admitted in a namespace that enforces
// Pod Security "restricted" (deploy/kubernetes/base/namespace-sandboxes.yaml); otherwise every
// create fails with "violates PodSecurity". No cluster here, so test/deploy/pod-security.ts
// evaluates the profile's rules; the evaluator itself is tested first, on pods that break each.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { parseConfig } from '../../shared/config.ts';
import { kubernetesOptions } from '../../shared/runtime/index.ts';
import { sandboxPodManifest, type KubernetesRuntimeOptions } from '../../shared/runtime/kubernetes/index.ts';
import { CHECKS, describeViolations, restrictedViolations, type PodLike } from './pod-security.ts';

/** A small pod that meets "restricted": the baseline every case below breaks in one place. */
function compliantPod(): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'ok', annotations: {} },
    spec: {
      securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      initContainers: [
        {
          name: 'init',
          image: 'busybox',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
      containers: [
        {
          name: 'main',
          image: 'busybox',
          ports: [{ containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/', port: 8080 } },
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } },
        },
      ],
      volumes: [
        { name: 'scratch', emptyDir: {} },
        { name: 'config', configMap: { name: 'c' } },
        { name: 'token', projected: { sources: [] } },
      ],
    },
  };
}

type Mutation = (pod: V1Pod) => void;
const spec = (pod: V1Pod) => pod.spec!;
const main = (pod: V1Pod) => spec(pod).containers[0]!;
const init = (pod: V1Pod) => spec(pod).initContainers![0]!;

// [what, how the pod is broken, the check that must catch it]
const VIOLATIONS: [string, Mutation, (typeof CHECKS)[number]][] = [
  ['a Windows HostProcess pod', (p) => (spec(p).securityContext!.windowsOptions = { hostProcess: true }), 'hostProcess'],
  ['a HostProcess container', (p) => (main(p).securityContext!.windowsOptions = { hostProcess: true }), 'hostProcess'],
  ['the host network', (p) => (spec(p).hostNetwork = true), 'hostNamespaces'],
  ['the host PID namespace', (p) => (spec(p).hostPID = true), 'hostNamespaces'],
  ['the host IPC namespace', (p) => (spec(p).hostIPC = true), 'hostNamespaces'],
  ['a privileged container', (p) => (main(p).securityContext!.privileged = true), 'privileged'],
  ['a privileged init container', (p) => (init(p).securityContext!.privileged = true), 'privileged'],
  ['capabilities not dropped', (p) => (main(p).securityContext!.capabilities = { add: ['NET_BIND_SERVICE'] }), 'capabilities_restricted'],
  ['CAP_SYS_ADMIN added', (p) => main(p).securityContext!.capabilities!.add!.push('SYS_ADMIN'), 'capabilities_restricted'],
  ['CHOWN added (baseline allows it, restricted does not)', (p) => main(p).securityContext!.capabilities!.add!.push('CHOWN'), 'capabilities_restricted'],
  ['a hostPath volume', (p) => spec(p).volumes!.push({ name: 'host', hostPath: { path: '/' } }), 'hostPathVolumes'],
  ['a hostPath volume (as a volume type)', (p) => spec(p).volumes!.push({ name: 'host', hostPath: { path: '/' } }), 'restrictedVolumes'],
  ['an NFS volume', (p) => spec(p).volumes!.push({ name: 'nfs', nfs: { server: 'nfs', path: '/' } }), 'restrictedVolumes'],
  ['a gitRepo volume', (p) => spec(p).volumes!.push({ name: 'git', gitRepo: { repository: 'https://example.com/r.git' } }), 'restrictedVolumes'],
  ['a host port', (p) => (main(p).ports![0]!.hostPort = 80), 'hostPorts'],
  ['AppArmor unconfined (field)', (p) => (main(p).securityContext!.appArmorProfile = { type: 'Unconfined' }), 'appArmorProfile'],
  ['AppArmor unconfined (pod field)', (p) => (spec(p).securityContext!.appArmorProfile = { type: 'Unconfined' }), 'appArmorProfile'],
  [
    'AppArmor unconfined (annotation)',
    (p) => (p.metadata!.annotations!['container.apparmor.security.beta.kubernetes.io/main'] = 'unconfined'),
    'appArmorProfile',
  ],
  ['an SELinux type of its own', (p) => (main(p).securityContext!.seLinuxOptions = { type: 'spc_t' }), 'seLinuxOptions'],
  ['an SELinux user', (p) => (spec(p).securityContext!.seLinuxOptions = { user: 'system_u' }), 'seLinuxOptions'],
  ['an SELinux role', (p) => (spec(p).securityContext!.seLinuxOptions = { role: 'sysadm_r' }), 'seLinuxOptions'],
  ['an unmasked /proc', (p) => (main(p).securityContext!.procMount = 'Unmasked'), 'procMount'],
  ['seccomp Unconfined on the pod', (p) => (spec(p).securityContext!.seccompProfile = { type: 'Unconfined' }), 'seccompProfile_baseline'],
  ['seccomp Unconfined on a container', (p) => (main(p).securityContext!.seccompProfile = { type: 'Unconfined' }), 'seccompProfile_restricted'],
  [
    'seccomp unconfined by the old annotation',
    (p) => (p.metadata!.annotations!['seccomp.security.alpha.kubernetes.io/pod'] = 'unconfined'),
    'seccompProfile_baseline',
  ],
  ['no seccomp profile at all', (p) => delete spec(p).securityContext!.seccompProfile, 'seccompProfile_restricted'],
  ['an unsafe sysctl', (p) => (spec(p).securityContext!.sysctls = [{ name: 'kernel.msgmax', value: '65536' }]), 'sysctls'],
  ['a probe aimed at another host', (p) => (main(p).readinessProbe!.httpGet!.host = '169.254.169.254'), 'hostProbesAndHostLifecycle'],
  [
    'a lifecycle hook aimed at another host',
    (p) => (main(p).lifecycle = { preStop: { tcpSocket: { host: '10.0.0.1', port: 22 } } }),
    'hostProbesAndHostLifecycle',
  ],
  ['privilege escalation left unset', (p) => delete main(p).securityContext!.allowPrivilegeEscalation, 'allowPrivilegeEscalation'],
  ['privilege escalation allowed', (p) => (init(p).securityContext!.allowPrivilegeEscalation = true), 'allowPrivilegeEscalation'],
  ['runAsNonRoot unset everywhere', (p) => delete spec(p).securityContext!.runAsNonRoot, 'runAsNonRoot'],
  ['runAsNonRoot false on a container', (p) => (main(p).securityContext!.runAsNonRoot = false), 'runAsNonRoot'],
  ['uid 0 on the pod', (p) => (spec(p).securityContext!.runAsUser = 0), 'runAsUser'],
  ['uid 0 on a container', (p) => (main(p).securityContext!.runAsUser = 0), 'runAsUser'],
  [
    'an ephemeral debug container with no security context',
    (p) => (spec(p).ephemeralContainers = [{ name: 'debug', image: 'busybox' }]),
    'allowPrivilegeEscalation',
  ],
];

describe('the Pod Security "restricted" evaluator', () => {
  test('admits a pod that meets the profile', () => {
    const violations = restrictedViolations(compliantPod());
    assert.deepEqual(violations, [], describeViolations(violations));
  });

  test('admits what the profile allows: per-container settings, Localhost profiles, safe sysctls', () => {
    const pod = compliantPod();
    delete spec(pod).securityContext!.runAsNonRoot;
    delete spec(pod).securityContext!.seccompProfile;
    for (const c of [main(pod), init(pod)]) {
      c.securityContext!.runAsNonRoot = true;
      c.securityContext!.seccompProfile = { type: 'Localhost', localhostProfile: 'profiles/strict.json' };
      c.securityContext!.appArmorProfile = { type: 'RuntimeDefault' };
      c.securityContext!.seLinuxOptions = { type: 'container_t', level: 's0:c1,c2' };
    }
    spec(pod).securityContext!.sysctls = [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }];
    pod.metadata!.annotations!['container.apparmor.security.beta.kubernetes.io/main'] = 'runtime/default';
    spec(pod).volumes!.push({ name: 'claim', persistentVolumeClaim: { claimName: 'c' } }, { name: 's', secret: { secretName: 's' } });
    const violations = restrictedViolations(pod);
    assert.deepEqual(violations, [], describeViolations(violations));
  });

  for (const [what, mutate, check] of VIOLATIONS) {
    test(`refuses ${what} (${check})`, () => {
      const pod = compliantPod();
      mutate(pod);
      const violations = restrictedViolations(pod);
      assert.ok(
        violations.some((v) => v.check === check),
        `expected a ${check} violation, got:\n${describeViolations(violations) || '  none'}`,
      );
    });
  }

  test('every check of the evaluator is shown to fire by a case above', () => {
    const covered = new Set(VIOLATIONS.map(([, , check]) => check));
    assert.deepEqual(CHECKS.filter((c) => !covered.has(c)), []);
  });
});

/** The runtime's options exactly as createRuntime builds them from the configuration. */
function runtimeOptionsFromConfig(env: Record<string, string> = {}): KubernetesRuntimeOptions {
  const config = parseConfig({ DATABASE_URL: 'postgres://u:p@db:5432/paddock', REDIS_URL: 'redis://redis:6379', ...env }, 'worker');
  return kubernetesOptions(config, new KubeConfig());
}

const SANDBOX = { id: 'sbx_0123456789abcdefghijklmn', accountId: 'acct_0123456789abcdefghijklmn', capSeconds: 1800 };

function assertRestricted(pod: PodLike): void {
  const violations = restrictedViolations(pod);
  assert.deepEqual(violations, [], `the sandbox pod would be refused under Pod Security "restricted":\n${describeViolations(violations)}`);
}

describe('the sandbox pod of the Kubernetes runtime', () => {
  test('meets "restricted" with the default settings', () => {
    const pod = sandboxPodManifest(SANDBOX, runtimeOptionsFromConfig());
    assert.equal(pod.spec?.runtimeClassName, undefined);
    assertRestricted(pod);
  });

  test('meets "restricted" with a RuntimeClass (gVisor, Kata)', () => {
    const pod = sandboxPodManifest(SANDBOX, runtimeOptionsFromConfig({ PADDOCK_KUBE_RUNTIME_CLASS: 'gvisor' }));
    assert.equal(pod.spec?.runtimeClassName, 'gvisor');
    assertRestricted(pod);
  });

  test('meets "restricted" with a requested image and other resources', () => {
    const options = runtimeOptionsFromConfig({
      PADDOCK_KUBE_ALLOWED_IMAGES: 'docker.io/library/python:3.13-slim',
      PADDOCK_KUBE_CPU_LIMIT: '2',
      PADDOCK_KUBE_MEMORY_LIMIT: '4Gi',
    });
    const pod = sandboxPodManifest({ ...SANDBOX, image: 'docker.io/library/python:3.13-slim' }, options);
    assert.equal(pod.spec?.containers[0]?.image, 'docker.io/library/python:3.13-slim');
    assertRestricted(pod);
  });

  test('carries no Kubernetes credential into the sandbox', () => {
    // Not a Pod Security rule, but the reason the profile is not enough on its own: with a token,
    // sandboxed code could call the API server as the namespace's default service account.
    const pod = sandboxPodManifest(SANDBOX, runtimeOptionsFromConfig());
    assert.equal(pod.spec?.automountServiceAccountToken, false);
    assert.equal(pod.spec?.enableServiceLinks, false);
  });
});
