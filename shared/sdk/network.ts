import type { NetworkPolicy } from './types.ts';

/** A sandbox's egress policy in a few words: none, all, or what it allows. */
export function describeNetwork(policy: NetworkPolicy): string {
  return typeof policy.egress === 'string' ? policy.egress : `allow ${policy.egress.allow.join(', ')}`;
}
