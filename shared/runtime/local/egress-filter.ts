import { networkInterfaces } from 'node:os';
import { isIP } from 'node:net';
import type { NetworkPolicy } from '../../network/policy.ts';
import { addressRules, egressMode, nameRules } from '../../network/rules.ts';
import { BLOCKED_V4, BLOCKED_V6 } from '../../network/floor.ts';

// What a sandbox with network may not reach, as an nftables ruleset for its own network namespace.
// Root installs it before the sandbox's init runs; the sandbox user has no capability over that
// namespace, so it cannot change or read it. Rules match the destination address a packet leaves
// with, so a name that resolves to a private address (DNS rebinding) is refused all the same.
//
// A policy with domain rules sends the sandbox's DNS queries to Paddock's resolver for it
// (egress-resolver.ts), listening on RESOLVER inside the namespace, which answers the names the
// policy allows and, before it answers, adds the addresses it answers to the policy's named sets
// (namedSets). Each installed policy has a tag of its own: its sets' names carry it, and so does
// the conntrack mark of each connection a named set let through, whose later packets pass while
// that policy holds (an address's entry may lapse while a download runs); a change of policy
// replaces the sets and the tag, so neither what was resolved nor what was opened under the old
// one passes under the new.

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

/** Where Paddock's resolver for a sandbox listens in its namespace (UDP and TCP, port 53): on its loopback. */
export const RESOLVER = { address: '127.0.0.53', port: 53 } as const;

/**
 * Where the sandbox's brokered HTTPS goes (egress-broker.ts), in its namespace: its resolver
 * answers a brokered host with this address, so the sandbox's TLS for it ends at Paddock's egress.
 */
export const BROKER = { address: '127.0.0.54', port: 443 } as const;

/**
 * Where the sandbox's HTTP and HTTPS to a name its resolver answered go (the egress's
 * pass-through, ../pass-through.ts, run by the host's resolver): a connection on port 80 or 443
 * to an address opened for a name is sent here, whose listener reads the name it is for (the
 * request's Host, the TLS server name), lets it on only for a name the policy allows, and
 * connects to that name's own address: the name a connection claims is the name it reaches.
 */
export const PASS = { address: '127.0.0.55', ports: [80, 443] as const } as const;
/** The pass-through's ports as nft writes a set of them. */
const PASS_PORTS = `{ ${PASS.ports.join(', ')} }`;
/** The hook of the namespace's nat chains (the DNS redirect, the pass chain): before the filter. */
const NAT_OUTPUT = '    type nat hook output priority -100; policy accept;';

/** A policy as installed: with its tag (1 to 2^31 - 1), new at each change. */
export interface InstalledPolicy {
  policy: NetworkPolicy;
  tag: number;
  /** The hosts of the sandbox's brokered credentials (shared/network/brokered.ts); their values are the resolver's alone. */
  brokered?: string[];
}

/** Whether the sandbox's DNS goes to Paddock's resolver: its policy names domains, or it has brokered hosts. */
export function resolvedByPaddock(installed: InstalledPolicy): boolean {
  return nameRules(installed.policy).length > 0 || (installed.brokered?.length ?? 0) > 0;
}

/** Every address of this host, on any interface, read at each call (interfaces come and go): the floor holds them too, a public one reaching its services. */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((entry) => entry.address));
}

export interface EgressOptions {
  /** The host's own addresses (any interface): a public one would reach its services too. */
  hostAddresses: readonly string[];
  /** The sandbox's own policy, within the floor. */
  installed: InstalledPolicy;
}

/** The table of the sandbox's filter; its counter of refused packets. */
export const EGRESS_TABLE = 'paddock_egress';
export const REFUSED_COUNTER = 'refused';
/** The table that sends DNS queries to Paddock's resolver (a nat chain: IPv4, slirp has no IPv6). */
const DNS_TABLE = 'paddock_dns';

/** An address to open in a policy's named sets: on one port, or on every port; for `seconds`. */
export interface OpenEntry {
  family: 4 | 6;
  address: string;
  port?: number;
  seconds: number;
}

/** The entry as nft names it: its set (of the policy tagged `tag`) and its element. */
export function namedElement(tag: number, entry: OpenEntry): { set: string; element: string } {
  const sets = namedSets(tag);
  const set = entry.family === 4 ? (entry.port === undefined ? sets.v4 : sets.v4port) : entry.port === undefined ? sets.v6 : sets.v6port;
  return { set: `inet ${EGRESS_TABLE} ${set}`, element: entry.port === undefined ? entry.address : `${entry.address} . ${entry.port}` };
}

/** Addresses each named set holds at most. */
const NAMED_SET_SIZE = 4096;

/** The sets of the addresses the resolver answered under the policy tagged `tag`: any port, and address-and-port. */
export function namedSets(tag: number): { v4: string; v4port: string; v6: string; v6port: string } {
  const suffix = tag.toString(16);
  return { v4: `named4_${suffix}`, v4port: `named4p_${suffix}`, v6: `named6_${suffix}`, v6port: `named6p_${suffix}` };
}

/**
 * The nftables script (for `nft -f -`) of a sandbox's namespace: the hard floor, which no policy
 * changes, then the sandbox's policy in two chains of their own (policyChains), which a change of
 * policy replaces in one transaction (policyUpdate).
 */
export function egressRuleset(options: EgressOptions): string {
  const { installed } = options;
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
    ...policyChains(installed),
    '  chain output {',
    '    type filter hook output priority filter; policy accept;',
    // The sandbox's own loopback is its own: only its processes are in this namespace.
    '    oifname "lo" accept',
    // A connection the pass chain sent to the pass-through: this hook still sees the interface its
    // first route named, though it now goes to the sandbox's loopback.
    `    ip daddr ${PASS.address} tcp dport ${PASS_PORTS} accept`,
    // A query sent on to the resolver (DNS_TABLE) still names the interface it was routed to.
    `    ip daddr ${RESOLVER.address} meta l4proto { tcp, udp } th dport ${RESOLVER.port} accept`,
    // slirp's DNS forwarder is the one private address a policy may open (`all` does).
    `    ip daddr ${SLIRP.dns} meta l4proto { tcp, udp } th dport 53 jump dns`,
    // Refused rather than dropped: a connect fails at once instead of after its timeout.
    ...REFUSE.map((verdict) => `    ip daddr @blocked4 ${verdict}`),
    ...REFUSE.map((verdict) => `    ip6 daddr @blocked6 ${verdict}`),
    '    jump allowed',
    '  }',
    '}',
    `table ip ${DNS_TABLE} {`,
    '  chain to_resolver {',
    NAT_OUTPUT,
    ...redirectRules(installed),
    '  }',
    '}',
    '',
  ].join('\n');
}

/** Under a policy with domain rules, or with brokered hosts, queries to slirp's forwarder go to Paddock's resolver instead. */
function redirectRules(installed: InstalledPolicy): string[] {
  if (!resolvedByPaddock(installed)) return [];
  return [`    ip daddr ${SLIRP.dns} meta l4proto { tcp, udp } th dport 53 dnat to ${RESOLVER.address}:${RESOLVER.port}`];
}

/** A refusal, counted: TCP gets a reset, anything else an ICMP error, so nothing waits for a timeout. */
const REFUSE = [`meta l4proto tcp counter name "${REFUSED_COUNTER}" reject with tcp reset`, `counter name "${REFUSED_COUNTER}" reject with icmpx admin-prohibited`];

/**
 * The policy's named sets and two chains: `dns` (jumped to by a query to slirp's DNS forwarder:
 * accepted under `all` alone, since the host's resolvers answer any name and carry what a query
 * spells out) and `allowed` (what passed the floor: all of it under `all`; under `allow` the
 * listed ranges and ports, the addresses the resolver answered for the listed domains, and
 * nothing else).
 */
export function policyChains(installed: InstalledPolicy): string[] {
  const { policy, tag } = installed;
  const mode = egressMode(policy);
  const sets = namedSets(tag);
  const ports = 'meta l4proto { tcp, udp } th dport';
  const addresses = addressRules(policy).map((rule) => {
    const match = `${rule.family === 4 ? 'ip' : 'ip6'} daddr ${rule.cidr}`;
    return `    ${match}${rule.port === undefined ? '' : ` ${ports} ${rule.port}`} accept`;
  });
  const named =
    nameRules(policy).length === 0
      ? []
      : [
          `    ct mark ${tag} accept`,
          `    ip daddr @${sets.v4} ct mark set ${tag} accept`,
          `    meta l4proto { tcp, udp } ip daddr . th dport @${sets.v4port} ct mark set ${tag} accept`,
          `    ip6 daddr @${sets.v6} ct mark set ${tag} accept`,
          `    meta l4proto { tcp, udp } ip6 daddr . th dport @${sets.v6port} ct mark set ${tag} accept`,
        ];
  // Bounded: a name whose server answers another address each time opens no more than this.
  const bounds = `flags timeout; size ${NAMED_SET_SIZE};`;
  return [
    `  set ${sets.v4} { type ipv4_addr; ${bounds} }`,
    `  set ${sets.v4port} { type ipv4_addr . inet_service; ${bounds} }`,
    `  set ${sets.v6} { type ipv6_addr; ${bounds} }`,
    `  set ${sets.v6port} { type ipv6_addr . inet_service; ${bounds} }`,
    '  chain dns {',
    ...(mode === 'all' ? ['    accept'] : []),
    '  }',
    '  chain allowed {',
    ...(mode === 'all' ? [] : [...named, ...addresses, ...REFUSE.map((verdict) => `    ${verdict}`)]),
    '  }',
    // Before the filter: HTTP and HTTPS to an address opened for a name go to the pass-through,
    // which checks the name they are for (slirp has no IPv6: IPv4 alone).
    '  chain pass {',
    NAT_OUTPUT,
    ...(named.length === 0
      ? []
      : [
          `    ip daddr @${sets.v4} tcp dport ${PASS_PORTS} dnat ip to ${PASS.address}`,
          `    ip daddr . tcp dport @${sets.v4port} tcp dport ${PASS_PORTS} dnat ip to ${PASS.address}`,
        ]),
    '  }',
  ];
}

/**
 * A change of policy in one transaction, so no packet sees half of it: both chains emptied, the
 * old policy's named sets deleted (an answer the resolver gave under it opens nothing under the
 * new one), the new policy's sets and chains, and the DNS redirect as the new policy has it; then
 * `carried`, the answered addresses the new policy still allows, so that their connections (and
 * the sandbox's cached answers) go on.
 */
export function policyUpdate(installed: InstalledPolicy, previousTag: number | undefined, carried: OpenEntry[] = []): string {
  const old = previousTag === undefined ? [] : Object.values(namedSets(previousTag)).map((set) => `delete set inet ${EGRESS_TABLE} ${set}`);
  return [
    // Declared first, as at an install: a filter installed before the table was is given it.
    `table ip ${DNS_TABLE} {`,
    '  chain to_resolver {',
    NAT_OUTPUT,
    '  }',
    '}',
    // So is the pass chain: a filter installed by an earlier version has none.
    `table inet ${EGRESS_TABLE} {`,
    '  chain pass {',
    NAT_OUTPUT,
    '  }',
    '}',
    `flush chain inet ${EGRESS_TABLE} dns`,
    `flush chain inet ${EGRESS_TABLE} allowed`,
    `flush chain inet ${EGRESS_TABLE} pass`,
    `flush chain ip ${DNS_TABLE} to_resolver`,
    ...old,
    `table inet ${EGRESS_TABLE} {`,
    ...policyChains(installed),
    '}',
    `table ip ${DNS_TABLE} {`,
    '  chain to_resolver {',
    ...redirectRules(installed),
    '  }',
    '}',
    ...carried.map((entry) => {
      const { set, element } = namedElement(installed.tag, entry);
      return `add element ${set} { ${element} timeout ${entry.seconds}s }`;
    }),
    '',
  ].join('\n');
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
