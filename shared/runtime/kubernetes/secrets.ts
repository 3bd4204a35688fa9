import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { describeApiError, httpStatusOf } from './api-errors.ts';

/** The Secret calls the runtime and the egress gateway make, with NotFound and AlreadyExists turned into values. */
export class SecretClient {
  readonly #api: CoreV1Api;
  readonly #namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.#api = kubeConfig.makeApiClient(CoreV1Api);
    this.#namespace = namespace;
  }

  /** Makes it, or replaces the one of its name. */
  async put(secret: V1Secret): Promise<void> {
    const name = secret.metadata?.name ?? '';
    try {
      await this.#api.createNamespacedSecret({ namespace: this.#namespace, body: secret });
      return;
    } catch (err) {
      if (httpStatusOf(err) !== 409) throw describeApiError(`creating secret ${name}`, err);
    }
    try {
      await this.#api.replaceNamespacedSecret({ name, namespace: this.#namespace, body: secret });
    } catch (err) {
      throw describeApiError(`replacing secret ${name}`, err);
    }
  }

  async get(name: string): Promise<V1Secret | undefined> {
    try {
      return await this.#api.readNamespacedSecret({ name, namespace: this.#namespace });
    } catch (err) {
      if (httpStatusOf(err) === 404) return undefined;
      throw describeApiError(`reading secret ${name}`, err);
    }
  }

  /** Removes it; nothing to do when it is not there. */
  async delete(name: string): Promise<void> {
    try {
      await this.#api.deleteNamespacedSecret({ name, namespace: this.#namespace });
    } catch (err) {
      if (httpStatusOf(err) !== 404) throw describeApiError(`deleting secret ${name}`, err);
    }
  }
}
