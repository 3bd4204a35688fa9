import type { V1Pod } from '@kubernetes/client-node';
import type { RuntimeSandbox, RuntimeStatus } from '../types.ts';
import { ACCOUNT_ID_LABEL, CONTAINER_NAME, sandboxIdFor } from './names.ts';

// Waiting reasons the kubelet would keep retrying forever without anything changing: the user
// has to pick another image. (ErrImagePull can be a registry hiccup, but a sandbox that cannot
// start within seconds is of no use to anyone, so it counts as permanent.)
const HOPELESS_WAITING = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
]);

export type StartupVerdict =
  | { kind: 'ready' }
  | { kind: 'starting'; detail: string }
  | { kind: 'hopeless'; reason: string }
  | { kind: 'gone'; detail: string };

/** Where a pod stands on its way to running, for create() to decide whether to keep waiting. */
export function startupVerdict(pod: V1Pod | undefined): StartupVerdict {
  if (!pod) return { kind: 'gone', detail: 'the pod was deleted while it was starting' };
  if (pod.metadata?.deletionTimestamp) return { kind: 'gone', detail: 'the pod is being deleted' };
  const failure = failureReason(pod);
  if (failure) return { kind: 'hopeless', reason: failure };
  const phase = pod.status?.phase;
  const container = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME);
  if (phase === 'Running' && container?.ready) return { kind: 'ready' };
  const waiting = container?.state?.waiting;
  const detail = waiting?.reason
    ? `${phase ?? 'Pending'}, ${waiting.reason}${waiting.message ? `: ${clip(waiting.message)}` : ''}`
    : unschedulable(pod) ?? phase ?? 'Pending';
  return { kind: 'starting', detail };
}

/** Why the pod can never run, in words a user can act on; undefined while it still might. */
export function failureReason(pod: V1Pod): string | undefined {
  const phase = pod.status?.phase;
  const container = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME);
  const image = pod.spec?.containers.find((c) => c.name === CONTAINER_NAME)?.image ?? 'the image';
  const waiting = container?.state?.waiting;
  if (waiting?.reason && HOPELESS_WAITING.has(waiting.reason)) {
    const what =
      waiting.reason === 'InvalidImageName'
        ? `image "${image}" is not a valid image name`
        : waiting.reason === 'CreateContainerConfigError'
          ? `the sandbox container for image "${image}" cannot be configured`
          : `image "${image}" cannot be pulled`;
    return `${what} (${waiting.reason})${waiting.message ? `: ${clip(waiting.message)}` : ''}`;
  }
  if (phase === 'Failed') {
    const terminated = container?.state?.terminated;
    const why = pod.status?.reason ?? terminated?.reason ?? 'Failed';
    const message = pod.status?.message ?? terminated?.message;
    return `the sandbox pod failed (${why})${message ? `: ${clip(message)}` : ''}`;
  }
  if (phase === 'Succeeded') return 'the sandbox pod has exited';
  return undefined;
}

function unschedulable(pod: V1Pod): string | undefined {
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status !== 'False') return undefined;
  return `Pending, ${scheduled.reason ?? 'not scheduled'}${scheduled.message ? `: ${clip(scheduled.message)}` : ''}`;
}

const STATUS: Record<string, RuntimeStatus> = {
  Pending: 'pending',
  Running: 'running',
  Succeeded: 'terminated',
  Failed: 'failed',
};

/** The runtime's view of one of our pods; undefined for a pod whose name is not a sandbox's. */
export function sandboxFromPod(pod: V1Pod): RuntimeSandbox | undefined {
  const id = sandboxIdFor(pod.metadata?.name ?? '');
  if (!id) return undefined;
  const accountId = pod.metadata?.labels?.[ACCOUNT_ID_LABEL];
  const base = { id, ...(accountId ? { accountId } : {}) };
  // Terminating: on its way out whatever its phase still says.
  if (pod.metadata?.deletionTimestamp) return { ...base, status: 'terminated' };
  const reason = failureReason(pod);
  // A pod stuck on an image pull is Pending to Kubernetes but will never run: report it failed.
  if (reason && pod.status?.phase !== 'Succeeded') return { ...base, status: 'failed', reason };
  return { ...base, status: STATUS[pod.status?.phase ?? 'Pending'] ?? 'pending' };
}

function clip(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
