import { BlockList, isIPv4, isIPv6 } from 'node:net';

// Where a webhook is never delivered: loopback, private, link-local, shared (CGNAT), metadata,
// multicast, reserved and unspecified addresses, in IPv4 and IPv6, including IPv4 addresses
// carried inside IPv6 ones (mapped, NAT64, 6to4). Checked on the address the delivery connects to.
const V4: [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
  ['168.63.129.16', 32, 'metadata'],
];
const V6: [string, number, string][] = [
  ['::', 96, 'unspecified, loopback or IPv4-compatible'],
  ['100::', 64, 'discard-only'],
  ['2001::', 32, 'Teredo'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

const blocks = new Map<string, BlockList>();
for (const [net, prefix, reason] of V4) addTo(reason, net, prefix, 'ipv4');
for (const [net, prefix, reason] of V6) addTo(reason, net, prefix, 'ipv6');

function addTo(reason: string, net: string, prefix: number, type: 'ipv4' | 'ipv6') {
  let list = blocks.get(reason);
  if (!list) blocks.set(reason, (list = new BlockList()));
  list.addSubnet(net, prefix, type);
}

/** Why the address is refused, or undefined when a webhook may connect to it. Not an IP: refused. */
export function refusedAddressReason(address: string): string | undefined {
  if (isIPv4(address)) return check(address, 'ipv4');
  if (!isIPv6(address)) return 'not an IP address';
  const bytes = ipv6Bytes(address);
  if (!bytes) return 'not an IP address';
  const embedded = embeddedIpv4(bytes);
  if (embedded) {
    const reason = check(embedded, 'ipv4');
    if (reason) return `${reason} (IPv4 ${embedded} inside IPv6)`;
  }
  return check(address, 'ipv6');
}

function check(address: string, type: 'ipv4' | 'ipv6'): string | undefined {
  for (const [reason, list] of blocks) if (list.check(address, type)) return reason;
  return undefined;
}

/** The 16 bytes of an IPv6 address (a trailing dotted quad and a zone allowed). */
export function ipv6Bytes(address: string): number[] | undefined {
  let text = address.split('%')[0]!.toLowerCase();
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    const quad = text.slice(lastColon + 1);
    if (!isIPv4(quad)) return undefined;
    const p = quad.split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  const groups = [...head, ...Array<number>(missing).fill(0), ...rest];
  if (groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return undefined;
  for (const g of groups) tail.push(g >> 8, g & 0xff);
  return tail;
}

/** The IPv4 address inside an IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address. */
function embeddedIpv4(b: number[]): string | undefined {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12).join('.');
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return b.slice(12).join('.');
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6).join('.');
  return undefined;
}
