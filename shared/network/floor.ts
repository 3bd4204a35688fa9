import { cidrWithin } from './rules.ts';

// The hard floor of every sandbox's egress (docs/api.md, "Egress policy"): ranges no policy opens,
// on either runtime. The local one refuses them in the sandbox's own namespace (nftables); the
// Kubernetes one leaves them out of every NetworkPolicy it writes.

/**
 * The IPv4 ranges no sandbox reaches, whatever its policy: everything local to a host or to its
 * provider (each runtime adds the host's own addresses, and its own services'). The documentation
 * ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) are routed nowhere on the internet and
 * are left open, so that a test host on one of them shows outbound access works.
 */
export const BLOCKED_V4: readonly string[] = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private, the pod networks, and slirp's own 10.0.2.0/24 (its gateway forwards to the host)
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

/** The IPv6 ranges no sandbox reaches (slirp4netns runs without IPv6: there these are a second line). */
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

/** Whether the range (`198.51.100.0/24`; an address with its whole prefix, `198.51.100.7/32`) lies wholly inside the floor. */
export function withinFloor(family: 4 | 6, cidr: string): boolean {
  return (family === 4 ? BLOCKED_V4 : BLOCKED_V6).some((range) => cidrWithin(cidr, range));
}

/** Whether the address is one of the floor's. */
export function addressInFloor(family: 4 | 6, address: string): boolean {
  return withinFloor(family, `${address}/${family === 4 ? 32 : 128}`);
}
