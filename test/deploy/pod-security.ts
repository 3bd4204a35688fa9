// A small evaluator of the Kubernetes Pod Security Standards, "restricted" profile (which
// includes everything of "baseline"), as the PodSecurity admission plugin applies it at version
// "latest" (k8s.io/pod-security-admission/policy). Each check has the plugin's id. It is
// stricter than the plugin in two places, both safe for a test: it grants no Windows exemption
// (spec.os.name: windows) and none for user-namespaced pods (hostUsers: false).
//
// Used by test/deploy/pod-security.test.ts (the sandbox pod the runtime creates) and
// test/deploy/kubernetes.test.ts (the control plane's pod templates).
import type {
  V1Container,
  V1EphemeralContainer,
  V1LifecycleHandler,
  V1ObjectMeta,
  V1PodSpec,
  V1Probe,
  V1SELinuxOptions,
} from '@kubernetes/client-node';

/** A pod, or a pod template: what admission looks at. */
export interface PodLike {
  metadata?: V1ObjectMeta;
  spec?: V1PodSpec;
}

export interface Violation {
  /** The PodSecurity check id, e.g. `runAsNonRoot`. */
  check: string;
  /** Where, e.g. `spec.containers[0].securityContext.runAsUser`. */
  path: string;
  message: string;
}

// Volume types the restricted profile allows; any other source (hostPath, nfs, gitRepo, …) is refused.
const ALLOWED_VOLUME_TYPES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

// Sysctls baseline allows: namespaced ones that cannot affect other pods (as of 1.32).
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
]);

const ALLOWED_SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);
const RESTRICTED_ADDABLE_CAPABILITIES = new Set(['NET_BIND_SERVICE']);
const ALLOWED_SECCOMP = new Set(['RuntimeDefault', 'Localhost']);
const ALLOWED_APPARMOR = new Set(['RuntimeDefault', 'Localhost']);
const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';
const SECCOMP_POD_ANNOTATION = 'seccomp.security.alpha.kubernetes.io/pod';
const SECCOMP_CONTAINER_ANNOTATION = 'container.seccomp.security.alpha.kubernetes.io/';

/** Every check in the evaluator, for tests that want to be sure each one can fire. */
export const CHECKS = [
  'hostProcess',
  'hostNamespaces',
  'privileged',
  'capabilities_restricted',
  'hostPathVolumes',
  'restrictedVolumes',
  'hostPorts',
  'appArmorProfile',
  'seLinuxOptions',
  'procMount',
  'seccompProfile_baseline',
  'seccompProfile_restricted',
  'sysctls',
  'hostProbesAndHostLifecycle',
  'allowPrivilegeEscalation',
  'runAsNonRoot',
  'runAsUser',
] as const;

type AnyContainer = V1Container | V1EphemeralContainer;

/** The violations of Pod Security "restricted"; empty when the API server would admit the pod. */
export function restrictedViolations(pod: PodLike): Violation[] {
  const out: Violation[] = [];
  const add = (check: (typeof CHECKS)[number], path: string, message: string) => out.push({ check, path, message });
  const spec = pod.spec;
  if (!spec) {
    add('runAsNonRoot', 'spec', 'the pod has no spec');
    return out;
  }
  const podSc = spec.securityContext ?? {};
  const annotations = pod.metadata?.annotations ?? {};
  const containers: { c: AnyContainer; path: string }[] = [
    ...(spec.initContainers ?? []).map((c, i) => ({ c, path: `spec.initContainers[${i}]` })),
    ...(spec.containers ?? []).map((c, i) => ({ c, path: `spec.containers[${i}]` })),
    ...(spec.ephemeralContainers ?? []).map((c, i) => ({ c, path: `spec.ephemeralContainers[${i}]` })),
  ];

  // --- baseline -----------------------------------------------------------------------------

  // HostProcess (Windows): privileged access to the host.
  if (podSc.windowsOptions?.hostProcess === true) {
    add('hostProcess', 'spec.securityContext.windowsOptions.hostProcess', 'must not be true');
  }
  for (const { c, path } of containers) {
    if (c.securityContext?.windowsOptions?.hostProcess === true) {
      add('hostProcess', `${path}.securityContext.windowsOptions.hostProcess`, 'must not be true');
    }
  }

  // Host namespaces.
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
    if (spec[field] === true) add('hostNamespaces', `spec.${field}`, 'must not be true');
  }

  // Privileged containers.
  for (const { c, path } of containers) {
    if (c.securityContext?.privileged === true) add('privileged', `${path}.securityContext.privileged`, 'must not be true');
  }

  // HostPath volumes (also refused by restrictedVolumes below; the plugin reports both).
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    if (v.hostPath) add('hostPathVolumes', `spec.volumes[${i}].hostPath`, `volume "${v.name}" is a hostPath`);
  }

  // Host ports.
  for (const { c, path } of containers) {
    for (const [i, p] of (c.ports ?? []).entries()) {
      if (p.hostPort !== undefined && p.hostPort !== 0) add('hostPorts', `${path}.ports[${i}].hostPort`, `must be unset or 0, not ${p.hostPort}`);
    }
  }

  // AppArmor: the runtime's default or a profile loaded on the node, never unconfined.
  if (podSc.appArmorProfile && !ALLOWED_APPARMOR.has(podSc.appArmorProfile.type)) {
    add('appArmorProfile', 'spec.securityContext.appArmorProfile.type', `must be RuntimeDefault or Localhost, not ${podSc.appArmorProfile.type}`);
  }
  for (const { c, path } of containers) {
    const profile = c.securityContext?.appArmorProfile;
    if (profile && !ALLOWED_APPARMOR.has(profile.type)) {
      add('appArmorProfile', `${path}.securityContext.appArmorProfile.type`, `must be RuntimeDefault or Localhost, not ${profile.type}`);
    }
  }
  for (const [key, value] of Object.entries(annotations)) {
    if (key.startsWith(APPARMOR_ANNOTATION) && value !== 'runtime/default' && !value.startsWith('localhost/')) {
      add('appArmorProfile', `metadata.annotations["${key}"]`, `must be runtime/default or localhost/*, not ${value}`);
    }
  }

  // SELinux: only the container types, and no custom user or role.
  const seLinux: { options: V1SELinuxOptions; path: string }[] = [];
  if (podSc.seLinuxOptions) seLinux.push({ options: podSc.seLinuxOptions, path: 'spec.securityContext.seLinuxOptions' });
  for (const { c, path } of containers) {
    if (c.securityContext?.seLinuxOptions) seLinux.push({ options: c.securityContext.seLinuxOptions, path: `${path}.securityContext.seLinuxOptions` });
  }
  for (const { options, path } of seLinux) {
    if (!ALLOWED_SELINUX_TYPES.has(options.type ?? '')) add('seLinuxOptions', `${path}.type`, `type ${options.type} is not allowed`);
    if (options.user) add('seLinuxOptions', `${path}.user`, 'must not be set');
    if (options.role) add('seLinuxOptions', `${path}.role`, 'must not be set');
  }

  // /proc mount type.
  for (const { c, path } of containers) {
    const procMount = c.securityContext?.procMount;
    if (procMount !== undefined && procMount !== 'Default') add('procMount', `${path}.securityContext.procMount`, `must be Default, not ${procMount}`);
  }

  // Seccomp, baseline: never Unconfined (fields and the old annotations).
  if (podSc.seccompProfile?.type === 'Unconfined') add('seccompProfile_baseline', 'spec.securityContext.seccompProfile.type', 'must not be Unconfined');
  for (const { c, path } of containers) {
    if (c.securityContext?.seccompProfile?.type === 'Unconfined') {
      add('seccompProfile_baseline', `${path}.securityContext.seccompProfile.type`, 'must not be Unconfined');
    }
  }
  for (const [key, value] of Object.entries(annotations)) {
    if ((key === SECCOMP_POD_ANNOTATION || key.startsWith(SECCOMP_CONTAINER_ANNOTATION)) && value === 'unconfined') {
      add('seccompProfile_baseline', `metadata.annotations["${key}"]`, 'must not be unconfined');
    }
  }

  // Sysctls: the safe set only.
  for (const [i, s] of (podSc.sysctls ?? []).entries()) {
    const name = s.name.replaceAll('/', '.');
    if (!SAFE_SYSCTLS.has(name)) add('sysctls', `spec.securityContext.sysctls[${i}].name`, `sysctl ${s.name} is not allowed`);
  }

  // Probes and lifecycle handlers may not aim at another host (1.34+).
  for (const { c, path } of containers) {
    const probes: [string, V1Probe | undefined][] = [
      ['livenessProbe', c.livenessProbe],
      ['readinessProbe', c.readinessProbe],
      ['startupProbe', c.startupProbe],
    ];
    const handlers: [string, V1LifecycleHandler | undefined][] = [
      ['lifecycle.postStart', c.lifecycle?.postStart],
      ['lifecycle.preStop', c.lifecycle?.preStop],
    ];
    for (const [name, p] of [...probes, ...handlers]) {
      if (p?.httpGet?.host) add('hostProbesAndHostLifecycle', `${path}.${name}.httpGet.host`, 'must be unset');
      if (p?.tcpSocket?.host) add('hostProbesAndHostLifecycle', `${path}.${name}.tcpSocket.host`, 'must be unset');
    }
  }

  // --- restricted ---------------------------------------------------------------------------

  // Volume types: only those that cannot reach the node or an arbitrary remote store.
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    const types = Object.keys(v).filter((k) => k !== 'name' && (v as unknown as Record<string, unknown>)[k] != null);
    const bad = types.filter((t) => !ALLOWED_VOLUME_TYPES.has(t));
    if (bad.length > 0 || types.length === 0) {
      add('restrictedVolumes', `spec.volumes[${i}]`, `volume "${v.name}" has restricted type ${bad.join(', ') || '(none)'}`);
    }
  }

  // Privilege escalation: explicitly off in every container.
  for (const { c, path } of containers) {
    if (c.securityContext?.allowPrivilegeEscalation !== false) {
      add('allowPrivilegeEscalation', `${path}.securityContext.allowPrivilegeEscalation`, 'must be false');
    }
  }

  // Running as non-root: true on the pod, or on every container; false nowhere.
  const podNonRoot = podSc.runAsNonRoot;
  if (podNonRoot === false) add('runAsNonRoot', 'spec.securityContext.runAsNonRoot', 'must not be false');
  for (const { c, path } of containers) {
    const own = c.securityContext?.runAsNonRoot;
    if (own === false) add('runAsNonRoot', `${path}.securityContext.runAsNonRoot`, 'must not be false');
    else if (own !== true && podNonRoot !== true) add('runAsNonRoot', `${path}.securityContext.runAsNonRoot`, 'must be true (here or on the pod)');
  }

  // Running as a non-root uid: never 0.
  if (podSc.runAsUser === 0) add('runAsUser', 'spec.securityContext.runAsUser', 'must not be 0');
  for (const { c, path } of containers) {
    if (c.securityContext?.runAsUser === 0) add('runAsUser', `${path}.securityContext.runAsUser`, 'must not be 0');
  }

  // Seccomp, restricted: RuntimeDefault or Localhost, on the pod or on every container.
  const podSeccomp = podSc.seccompProfile?.type;
  if (podSeccomp !== undefined && !ALLOWED_SECCOMP.has(podSeccomp)) {
    add('seccompProfile_restricted', 'spec.securityContext.seccompProfile.type', `must be RuntimeDefault or Localhost, not ${podSeccomp}`);
  }
  for (const { c, path } of containers) {
    const own = c.securityContext?.seccompProfile?.type;
    if (own !== undefined) {
      if (!ALLOWED_SECCOMP.has(own)) add('seccompProfile_restricted', `${path}.securityContext.seccompProfile.type`, `must be RuntimeDefault or Localhost, not ${own}`);
    } else if (podSeccomp === undefined) {
      add('seccompProfile_restricted', `${path}.securityContext.seccompProfile.type`, 'must be set (here or on the pod)');
    }
  }

  // Capabilities: drop ALL, add nothing but NET_BIND_SERVICE.
  for (const { c, path } of containers) {
    const caps = c.securityContext?.capabilities;
    if (!(caps?.drop ?? []).includes('ALL')) add('capabilities_restricted', `${path}.securityContext.capabilities.drop`, 'must include ALL');
    for (const cap of caps?.add ?? []) {
      if (!RESTRICTED_ADDABLE_CAPABILITIES.has(cap)) add('capabilities_restricted', `${path}.securityContext.capabilities.add`, `must not add ${cap}`);
    }
  }

  return out;
}

/** One line per violation, for assertion messages. */
export function describeViolations(violations: Violation[]): string {
  return violations.map((v) => `  ${v.check}: ${v.path}: ${v.message}`).join('\n');
}
