// How sandboxes map onto pods. A sandbox id (`sbx_…`) cannot be a pod name as it is, because
// object names are RFC 1123 (no `_`), so the one underscore becomes a hyphen, which ids never
// contain otherwise: the mapping is reversible without a lookup.

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'paddock';
export const SANDBOX_ID_LABEL = 'paddock.dev/sandbox-id';
export const ACCOUNT_ID_LABEL = 'paddock.dev/account-id';
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
export const CONTAINER_NAME = 'sandbox';

const SANDBOX_ID = /^([0-9a-z]+)_([0-9a-z]+)$/;
const POD_NAME = /^([0-9a-z]+)-([0-9a-z]+)$/;

/** The pod name for a sandbox id, or undefined when the id could never name a pod. */
export function podNameFor(sandboxId: string): string | undefined {
  const m = SANDBOX_ID.exec(sandboxId);
  return m ? `${m[1]}-${m[2]}` : undefined;
}

export function sandboxIdFor(podName: string): string | undefined {
  const m = POD_NAME.exec(podName);
  return m ? `${m[1]}_${m[2]}` : undefined;
}

/**
 * The metadata that makes an object the pod's (its NetworkPolicy, its credentials Secret): the
 * cluster removes it with the pod. Nothing without the pod's uid.
 */
export function ownedByPod(name: string, uid: string | undefined): { ownerReferences?: { apiVersion: 'v1'; kind: 'Pod'; name: string; uid: string }[] } {
  return uid ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name, uid }] } : {};
}
