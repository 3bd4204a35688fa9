import { isIP } from 'node:net';

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

/**
 * Refused IPv4 ranges: this host and everything local to it or to its provider. The documentation
 * ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) are routed nowhere on the internet and
 * are left open, so that a test host on one of them shows outbound access works.
 */
export const BLOCKED_V4: readonly string[] = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private, and slirp's own 10.0.2.0/24 (its gateway forwards to the host)
  '100.64.0.0/10', // carrier-grade NAT, used inside some clouds
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, with the cloud metadata address 169.254.169.254
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking, used for internal networks
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, and the broadcast address 255.255.255.255
];

/** Refused IPv6 ranges (slirp4netns runs without IPv6, so these are a second line). */
export const BLOCKED_V6: readonly string[] = [
  '::/127', // unspecified and loopback
  '::ffff:0:0/96', // IPv4-mapped: would reach the IPv4 ranges above
  '64:ff9b::/96', // NAT64: likewise
  '64:ff9b:1::/48', // local-use NAT64
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'fec0::/10', // site-local (deprecated, still routed by some)
  'ff00::/8', // multicast
];

export interface EgressOptions {
  /** The host's own addresses (any interface): a public one would reach its services too. */
  hostAddresses: readonly string[];
}

/** The nftables script (for `nft -f -`) of a sandbox's namespace. */
export function egressRuleset(options: EgressOptions): string {
  const v4 = [...BLOCKED_V4];
  const v6 = [...BLOCKED_V6];
  for (const raw of options.hostAddresses) {
    const address = raw.replace(/%.*$/, ''); // a link-local address's zone
    if (isIP(address) === 4) v4.push(`${address}/32`);
    else if (isIP(address) === 6) v6.push(`${address}/128`);
  }
  return [
    'table inet paddock_egress {',
    // auto-merge: the host's addresses may fall inside a listed range.
    `  set blocked4 { type ipv4_addr; flags interval; auto-merge; elements = { ${unique(v4).join(', ')} } }`,
    `  set blocked6 { type ipv6_addr; flags interval; auto-merge; elements = { ${unique(v6).join(', ')} } }`,
    '  chain output {',
    '    type filter hook output priority filter; policy accept;',
    // The sandbox's own loopback is its own: only its processes are in this namespace.
    '    oifname "lo" accept',
    `    ip daddr ${SLIRP.dns} meta l4proto { tcp, udp } th dport 53 accept`,
    // Refused rather than dropped: a connect fails at once instead of after its timeout.
    '    ip daddr @blocked4 meta l4proto tcp reject with tcp reset',
    '    ip daddr @blocked4 reject with icmpx admin-prohibited',
    '    ip6 daddr @blocked6 meta l4proto tcp reject with tcp reset',
    '    ip6 daddr @blocked6 reject with icmpx admin-prohibited',
    '  }',
    '}',
    '',
  ].join('\n');
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
