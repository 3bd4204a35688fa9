import { isIP } from 'node:net';
import { egressMode, egressRules, type NetworkPolicy } from '../../network/policy.ts';
import { BLOCKED_V4, BLOCKED_V6 } from '../../network/floor.ts';

// What a sandbox with network may not reach, as an nftables ruleset for its own network namespace.
// Root installs it before the sandbox's init runs; the sandbox user has no capability over that
// namespace, so it cannot change or read it. Rules match the destination address a packet leaves
// with, so a name that resolves to a private address (DNS rebinding) is refused all the same.

/** slirp4netns's fixed addresses inside the namespace (its defaults). */
export const SLIRP = {
  cidr: '10.0.2.0/24',
  /** Forwards to the host (its loopback unless --disable-host-loopback): refused. */
  gateway: '10.0.2.2',
  /** slirp's DNS forwarder to the host's resolvers: the one private address allowed, port 53 only. */
  dns: '10.0.2.3',
  address: '10.0.2.100',
  tap: 'tap0',
  mtu: 65520,
} as const;

export interface EgressOptions {
  /** The host's own addresses (any interface): a public one would reach its services too. */
  hostAddresses: readonly string[];
  /** The sandbox's own policy, within the floor. */
  policy: NetworkPolicy;
}

/** The table of the sandbox's filter; its counter of refused packets. */
export const EGRESS_TABLE = 'paddock_egress';
export const REFUSED_COUNTER = 'refused';

/**
 * The nftables script (for `nft -f -`) of a sandbox's namespace: the hard floor, which no policy
 * changes, then the sandbox's policy in two chains of their own (policyChains), which a change of
 * policy replaces in one transaction (policyUpdate).
 */
export function egressRuleset(options: EgressOptions): string {
  const v4 = [...BLOCKED_V4];
  const v6 = [...BLOCKED_V6];
  for (const raw of options.hostAddresses) {
    const address = raw.replace(/%.*$/, ''); // a link-local address's zone
    if (isIP(address) === 4) v4.push(`${address}/32`);
    else if (isIP(address) === 6) v6.push(`${address}/128`);
  }
  return [
    `table inet ${EGRESS_TABLE} {`,
    `  counter ${REFUSED_COUNTER} { }`,
    // auto-merge: the host's addresses may fall inside a listed range.
    `  set blocked4 { type ipv4_addr; flags interval; auto-merge; elements = { ${unique(v4).join(', ')} } }`,
    `  set blocked6 { type ipv6_addr; flags interval; auto-merge; elements = { ${unique(v6).join(', ')} } }`,
    ...policyChains(options.policy),
    '  chain output {',
    '    type filter hook output priority filter; policy accept;',
    // The sandbox's own loopback is its own: only its processes are in this namespace.
    '    oifname "lo" accept',
    // slirp's DNS forwarder is the one private address a policy may open (`all` does).
    `    ip daddr ${SLIRP.dns} meta l4proto { tcp, udp } th dport 53 jump dns`,
    // Refused rather than dropped: a connect fails at once instead of after its timeout.
    ...REFUSE.map((verdict) => `    ip daddr @blocked4 ${verdict}`),
    ...REFUSE.map((verdict) => `    ip6 daddr @blocked6 ${verdict}`),
    '    jump allowed',
    '  }',
    '}',
    '',
  ].join('\n');
}

/** A refusal, counted: TCP gets a reset, anything else an ICMP error, so nothing waits for a timeout. */
const REFUSE = [`meta l4proto tcp counter name "${REFUSED_COUNTER}" reject with tcp reset`, `counter name "${REFUSED_COUNTER}" reject with icmpx admin-prohibited`];

/**
 * The policy's two chains: `dns` (jumped to by a query to slirp's DNS forwarder: accepted under
 * `all` alone, since the host's resolvers answer any name and carry what a query spells out) and
 * `allowed` (what passed the floor: all of it under `all`; under `allow` the listed ranges and
 * ports; nothing else).
 */
export function policyChains(policy: NetworkPolicy): string[] {
  const mode = egressMode(policy);
  const allowed = egressRules(policy).map((rule) => {
    const match = `${rule.family === 4 ? 'ip' : 'ip6'} daddr ${rule.cidr}`;
    return `    ${match}${rule.port === undefined ? '' : ` meta l4proto { tcp, udp } th dport ${rule.port}`} accept`;
  });
  return [
    '  chain dns {',
    ...(mode === 'all' ? ['    accept'] : []),
    '  }',
    '  chain allowed {',
    ...(mode === 'all' ? [] : [...allowed, ...REFUSE.map((verdict) => `    ${verdict}`)]),
    '  }',
  ];
}

/** A change of policy: both chains emptied and filled again in one transaction, so no packet sees half of it. */
export function policyUpdate(policy: NetworkPolicy): string {
  return [`flush chain inet ${EGRESS_TABLE} dns`, `flush chain inet ${EGRESS_TABLE} allowed`, `table inet ${EGRESS_TABLE} {`, ...policyChains(policy), '}', ''].join('\n');
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
