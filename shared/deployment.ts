import type { Config } from './config.ts';

/**
 * The deployment a process belongs to: its runtime holds the deployment's sandboxes (pooled or an
 * account's). Deployments that share a database (and tell their Redis keys apart by prefix) keep
 * their sandboxes apart by the same name: each one's sweeps end, warn of and tend its own only, as
 * the sandbox it would destroy lives in another runtime, and its events belong to the other's
 * workers (their keys and webhook transport).
 */
export function deploymentOf(config: Pick<Config, 'PADDOCK_REDIS_PREFIX'>): string {
  return config.PADDOCK_REDIS_PREFIX;
}
