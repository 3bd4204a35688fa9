import type { V1Pod } from '@kubernetes/client-node';
import type { SandboxSpec } from '../types.ts';
import {
  ACCOUNT_ID_LABEL,
  CONTAINER_NAME,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  podNameFor,
  SANDBOX_ID_LABEL,
} from './names.ts';
import { chooseImage, type KubernetesRuntimeOptions } from './options.ts';
import { gatewayDns, gatewayTrust } from './egress-gateway.ts';

export const WORKSPACE = '/workspace';
const SANDBOX_UID = 1000;

// PID 1 only has to stay alive until the pod is deleted. `sleep infinity` is GNU-only, hence
// the loop; the TERM trap makes deletion take a moment instead of the whole grace period, since
// a shell as PID 1 ignores signals it has no handler for.
const KEEP_ALIVE = 'trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done';

/**
 * The pod for one sandbox. Pure, so tests can check it: it meets the Pod Security "restricted"
 * profile (non-root, no privilege escalation, no capabilities, RuntimeDefault seccomp, only
 * emptyDir volumes, and the egress gateway's ConfigMap of authorities) and has no service-account token, since sandboxed code is untrusted.
 */
export function sandboxPodManifest(spec: SandboxSpec, options: KubernetesRuntimeOptions): V1Pod {
  const name = podNameFor(spec.id);
  if (name === undefined) throw new TypeError(`not a sandbox id: ${JSON.stringify(spec.id)}`);
  const image = chooseImage(spec.image, options);
  // Where the egress gateway runs, every pod has its DNS and trusts its authority: both are fixed
  // at a pod's creation, and a policy or a brokered credential may come later.
  const trust = options.gateway && gatewayTrust();
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: options.namespace,
      labels: {
        [MANAGED_BY_LABEL]: MANAGED_BY,
        [SANDBOX_ID_LABEL]: spec.id,
        [ACCOUNT_ID_LABEL]: spec.accountId,
      },
    },
    spec: {
      restartPolicy: 'Never',
      // The cluster ends the sandbox itself should the reaper miss it.
      activeDeadlineSeconds: spec.capSeconds + options.deadlineGraceSeconds,
      terminationGracePeriodSeconds: 5,
      automountServiceAccountToken: false,
      // Service links would hand every sandbox the addresses of the namespace's services.
      enableServiceLinks: false,
      ...(options.gateway ? gatewayDns(options.gateway) : {}),
      ...(options.runtimeClassName ? { runtimeClassName: options.runtimeClassName } : {}),
      securityContext: {
        runAsNonRoot: true,
        runAsUser: SANDBOX_UID,
        runAsGroup: SANDBOX_UID,
        fsGroup: SANDBOX_UID,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: CONTAINER_NAME,
          image,
          command: ['/bin/sh', '-c', KEEP_ALIVE],
          workingDir: WORKSPACE,
          // No passwd entry exists for the uid, and the root filesystem is read-only: give tools
          // that write under $HOME somewhere to write (the local runtime does the same).
          env: [
            { name: 'HOME', value: WORKSPACE },
            { name: 'LANG', value: 'C.UTF-8' },
            ...(trust ? trust.env : []),
          ],
          resources: {
            requests: { cpu: options.resources.cpuRequest, memory: options.resources.memoryRequest },
            limits: { cpu: options.resources.cpuLimit, memory: options.resources.memoryLimit },
          },
          securityContext: {
            runAsNonRoot: true,
            runAsUser: SANDBOX_UID,
            runAsGroup: SANDBOX_UID,
            allowPrivilegeEscalation: false,
            privileged: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
            seccompProfile: { type: 'RuntimeDefault' },
          },
          // The only places the sandbox writes, as on the local runtime: the root is read-only, so
          // nothing the tenant writes is a file the image's programs read (/etc/ld.so.preload,
          // /etc/profile, a program on PATH before the system's).
          volumeMounts: [
            { name: 'workspace', mountPath: WORKSPACE },
            { name: 'tmp', mountPath: '/tmp' },
            { name: 'shm', mountPath: '/dev/shm' },
            ...(trust ? trust.mounts : []),
          ],
        },
      ],
      volumes: [
        { name: 'workspace', emptyDir: {} },
        { name: 'tmp', emptyDir: {} },
        // In memory, as a runtime's own /dev/shm is, counted against the container's memory limit.
        { name: 'shm', emptyDir: { medium: 'Memory' } },
        ...(trust ? [trust.volume] : []),
      ],
    },
  };
}
