import type { NetworkPolicy } from '../api/types.ts';

/** A session's egress policy in a few words: none, all, or what it allows. */
export function describePolicy(policy: NetworkPolicy): string {
  return typeof policy.egress === 'string' ? policy.egress : `allow ${policy.egress.allow.join(', ')}`;
}
