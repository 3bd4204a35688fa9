import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../logger.ts';
import { ImageRefusedError } from '../types.ts';
import type { EgressGatewayOptions } from './egress-gateway.ts';

export interface KubernetesRuntimeOptions {
  /** KubeConfig.loadFromDefault() in production: KUBECONFIG, or the in-cluster service account. */
  kubeConfig: KubeConfig;
  namespace: string;
  defaultImage: string;
  /** Images a request may name; '*' allows any. The default image is always allowed. */
  allowedImages: string[];
  /** gVisor, Kata, …: a stronger boundary than a plain container, where the cluster offers one. */
  runtimeClassName?: string;
  resources: { cpuRequest: string; cpuLimit: string; memoryRequest: string; memoryLimit: string };
  /** Added to the session cap for activeDeadlineSeconds, so the reaper normally gets there first. */
  deadlineGraceSeconds: number;
  /** Paddock's egress gateway (egress-gateway.ts), where it runs: names and brokered credentials in egress policies. */
  gateway?: EgressGatewayOptions;
  log?: Logger;
}

/**
 * The image a sandbox runs: the default, or a requested one the operator lists. The API resolves
 * it before anything is made; the manifest resolves it again, as the last line.
 */
export function chooseImage(requested: string | undefined, options: KubernetesRuntimeOptions): string {
  if (requested === undefined || requested === '' || requested === options.defaultImage) return options.defaultImage;
  if (options.allowedImages.includes('*') || options.allowedImages.includes(requested)) return requested;
  throw new ImageRefusedError('not_allowed', `The image "${requested}" is not on this operator's allowed list.`);
}
