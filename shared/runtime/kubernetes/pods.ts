import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { describeApiError, httpStatusOf, statusMessageOf } from './api-errors.ts';
import { PermanentRuntimeError } from '../types.ts';
import { MANAGED_SELECTOR } from './names.ts';

/** The few pod calls the runtime makes, with NotFound and AlreadyExists turned into values. */
export class PodClient {
  readonly namespace: string;
  private readonly api: CoreV1Api;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.api = kubeConfig.makeApiClient(CoreV1Api);
    this.namespace = namespace;
  }

  async read(name: string): Promise<V1Pod | undefined> {
    try {
      return await this.api.readNamespacedPod({ name, namespace: this.namespace });
    } catch (err) {
      if (httpStatusOf(err) === 404) return undefined;
      throw describeApiError(`reading pod ${name}`, err);
    }
  }

  /** Creates the pod; false when one of that name exists already. */
  async create(pod: V1Pod): Promise<boolean> {
    try {
      await this.api.createNamespacedPod({ namespace: this.namespace, body: pod });
      return true;
    } catch (err) {
      const code = httpStatusOf(err);
      if (code === 409) return false;
      // The API server refused the manifest itself (invalid, or against the namespace's Pod
      // Security level): sending it again will not help. A quota refusal (also 403) may pass later.
      if (code === 400 || code === 422 || (code === 403 && /violates PodSecurity/.test(statusMessageOf(err) ?? ''))) {
        throw new PermanentRuntimeError(describeApiError('the sandbox pod was refused', err).message);
      }
      throw describeApiError(`creating pod ${pod.metadata?.name ?? ''}`, err);
    }
  }

  /** Asks for deletion; false when the pod did not exist. */
  async delete(name: string, gracePeriodSeconds: number): Promise<boolean> {
    try {
      await this.api.deleteNamespacedPod({ name, namespace: this.namespace, gracePeriodSeconds });
      return true;
    } catch (err) {
      if (httpStatusOf(err) === 404) return false;
      throw describeApiError(`deleting pod ${name}`, err);
    }
  }

  /** Every pod Paddock manages in the namespace, page by page so a big list stays bounded. */
  async listManaged(): Promise<V1Pod[]> {
    const pods: V1Pod[] = [];
    let continueToken: string | undefined;
    do {
      let page;
      try {
        page = await this.api.listNamespacedPod({
          namespace: this.namespace,
          labelSelector: MANAGED_SELECTOR,
          limit: 500,
          ...(continueToken ? { _continue: continueToken } : {}),
        });
      } catch (err) {
        throw describeApiError('listing pods', err);
      }
      pods.push(...page.items);
      continueToken = page.metadata?._continue || undefined;
    } while (continueToken);
    return pods;
  }
}
