import { readFile } from 'node:fs/promises';
import { CoreV1Api, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { describeApiError, httpStatusOf } from '../api-errors.ts';
import { SYSTEM_BUNDLE } from '../../local/egress-ca.ts';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../names.ts';
import { TRUST_BUNDLE_KEY, TRUST_CA_KEY, TRUST_CONFIG_MAP } from '../egress-gateway.ts';

// What sandbox pods trust (egress-gateway.ts mounts it): the gateway's own bundle of public
// authorities (its image's, Debian's) with the egress's certificate appended, and that
// certificate alone. The gateway publishes it, so the certificate in it is always the one it
// signs with: the operator gives the authority's Secret, nothing else.

/** The ConfigMap as the gateway publishes it, from its authority's certificate (PEM). */
export async function trustConfigMap(caCert: string): Promise<V1ConfigMap> {
  const system = await readFile(SYSTEM_BUNDLE, 'utf8').catch(() => '');
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: TRUST_CONFIG_MAP, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
    data: {
      [TRUST_BUNDLE_KEY]: `${system}${system.endsWith('\n') || system === '' ? '' : '\n'}${caCert}`,
      [TRUST_CA_KEY]: caCert,
    },
  };
}

/** Makes the ConfigMap in the sandboxes' namespace, or replaces it where it differs. */
export async function publishTrust(kubeConfig: KubeConfig, namespace: string, configMap: V1ConfigMap): Promise<void> {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const name = configMap.metadata!.name!;
  try {
    await api.createNamespacedConfigMap({ namespace, body: configMap });
    return;
  } catch (err) {
    if (httpStatusOf(err) !== 409) throw describeApiError(`creating config map ${name}`, err);
  }
  try {
    const current = await api.readNamespacedConfigMap({ name, namespace });
    if (JSON.stringify(current.data ?? {}) === JSON.stringify(configMap.data)) return;
    await api.replaceNamespacedConfigMap({ name, namespace, body: configMap });
  } catch (err) {
    throw describeApiError(`replacing config map ${name}`, err);
  }
}
