import { Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type { PodClient } from './pods.ts';

export type Decision<T> = { done: true; value: T } | { done: false; detail: string };

/** The wait ran out; `lastSeen` says where the pod was stuck, for the error message. */
export class WaitTimeoutError extends Error {
  override name = 'WaitTimeoutError';
  readonly lastSeen: string;
  constructor(lastSeen: string) {
    super(`timed out waiting for the pod (last seen: ${lastSeen})`);
    this.lastSeen = lastSeen;
  }
}

/**
 * Waits until `decide` is done with one pod (undefined = deleted), the Kubernetes way: read it,
 * then watch from that resourceVersion so no change between the two is missed. A watch that ends
 * (server timeout, 410 Expired, a dropped connection, no permission to watch) just starts the
 * read-then-watch again, with backoff when that keeps happening quickly, so the worst case is
 * polling. `decide` may throw to give up.
 */
export async function waitForPod<T>(
  kubeConfig: KubeConfig,
  pods: PodClient,
  name: string,
  deadline: number,
  decide: (pod: V1Pod | undefined) => Decision<T>,
  signal?: AbortSignal,
): Promise<T> {
  const watch = new Watch(kubeConfig);
  let lastSeen = 'not seen yet';
  let quickEnds = 0;
  for (;;) {
    signal?.throwIfAborted();
    const pod = await pods.read(name);
    const now = decide(pod);
    if (now.done) return now.value;
    lastSeen = now.detail;
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new WaitTimeoutError(lastSeen);
    const started = Date.now();
    const rv = pod?.metadata?.resourceVersion;
    const outcome = await watchOnce(watch, pods.namespace, name, rv, remaining, decide, signal);
    if (outcome.done) return outcome.value;
    lastSeen = outcome.detail || lastSeen;
    quickEnds = Date.now() - started < 1000 ? quickEnds + 1 : 0;
    if (quickEnds > 0) await sleep(Math.min(50 * 2 ** quickEnds, 2000), deadline, signal);
  }
}

function watchOnce<T>(
  watch: Watch,
  namespace: string,
  name: string,
  resourceVersion: string | undefined,
  timeoutMs: number,
  decide: (pod: V1Pod | undefined) => Decision<T>,
  signal: AbortSignal | undefined,
): Promise<Decision<T>> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let controller: AbortController | undefined;
    let lastSeen = '';
    const finish = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      controller?.abort();
      settle();
    };
    const keepWaiting = () => finish(() => resolve({ done: false, detail: lastSeen }));
    const onAbort = () => finish(() => reject(signal?.reason));
    const timer = setTimeout(keepWaiting, timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });

    const query: Record<string, string | boolean> = { fieldSelector: `metadata.name=${name}`, allowWatchBookmarks: true };
    if (resourceVersion) query.resourceVersion = resourceVersion;
    watch
      .watch(
        `/api/v1/namespaces/${namespace}/pods`,
        query,
        (type: string, object: V1Pod) => {
          if (settled || type === 'BOOKMARK') return;
          // ERROR is almost always 410 Expired: our resourceVersion is too old, read afresh.
          if (type === 'ERROR') return keepWaiting();
          try {
            const decision = decide(type === 'DELETED' ? undefined : object);
            if (decision.done) finish(() => resolve(decision));
            else lastSeen = decision.detail;
          } catch (err) {
            finish(() => reject(err as Error));
          }
        },
        keepWaiting,
      )
      .then((c) => {
        controller = c;
        if (settled) c.abort();
      }, keepWaiting);
  });
}

function sleep(ms: number, deadline: number, signal: AbortSignal | undefined): Promise<void> {
  const wait = Math.max(0, Math.min(ms, deadline - Date.now()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, wait);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
