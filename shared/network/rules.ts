import { isIP } from 'node:net';

// The rules of an egress policy (policy.ts) made exact, and what they cover: no schema library
// here, so that the host's resolver for sandboxes (shared/runtime/local/egress-resolver-main.ts),
// a process of its own, loads only what it uses. Its functions take of a policy the shape they read.

/** The modes in order of what they open: an operator's maximum admits its own and those before it. */
export const EGRESS_MODES = ['none', 'allow', 'all'] as const;
export type EgressMode = (typeof EGRESS_MODES)[number];

/** What these functions read of a policy (policy.ts's NetworkPolicy). */
interface PolicyRules {
  egress: 'none' | 'all' | { allow: readonly string[] };
}

/** One rule made exact: an address range of one family, and a port or every port. */
export interface AddressRule {
  family: 4 | 6;
  /** The range with its prefix length, host bits clear: `198.51.100.0/24`, `2001:db8::1/128`. */
  cidr: string;
  port?: number;
}

/**
 * One domain rule: the name (lowercase, no final dot), or with `wildcard` every name below it and
 * not the name itself (`*.example.com`); a port or every port.
 */
export interface NameRule {
  name: string;
  wildcard: boolean;
  port?: number;
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/**
 * A domain rule as written (`pypi.org`, `*.githubusercontent.com`, either with `:443`), or why it
 * is not one; undefined when the text is no name at all (an address).
 */
function parseNameRule(text: string): NameRule | string | undefined {
  const colon = text.lastIndexOf(':');
  const host = colon < 0 ? text : text.slice(0, colon);
  // Letters somewhere, or a wildcard: an address has neither (an IPv6 one goes in brackets).
  if (!/[a-z*]/i.test(host) || host.startsWith('[') || host.includes(':')) return undefined;
  let port: number | undefined;
  if (colon >= 0) {
    const parsed = parsePort(text.slice(colon + 1));
    if (typeof parsed === 'string') return parsed;
    port = parsed;
  }
  const wildcard = host.startsWith('*.');
  const name = (wildcard ? host.slice(2) : host).toLowerCase().replace(/\.$/, '');
  const labels = name.split('.');
  if (name.length > 253 || labels.some((label) => !LABEL.test(label))) {
    return 'a domain is labels of letters, digits and hyphens joined by dots; a wildcard is a whole first label: *.example.com';
  }
  if (labels.length < 2) return 'a domain names at least two labels (example.com)';
  if (/^[0-9]+$/.test(labels.at(-1)!)) return 'not an address, nor a domain (its last label is all digits)';
  return { name, wildcard, ...(port === undefined ? {} : { port }) };
}

/** Whether `rule` covers `name` (lowercase, no final dot): itself, or for a wildcard a name below it. */
export function nameRuleCovers(rule: NameRule, name: string): boolean {
  return rule.wildcard ? name.endsWith(`.${rule.name}`) : name === rule.name;
}

/** A rule as written, or why it is not one: a domain (parseNameRule), or an address (parseAddressRule). */
export function parseEgressRule(text: string): AddressRule | NameRule | string {
  return parseNameRule(text) ?? parseAddressRule(text);
}

/**
 * An address rule as written, or why it is not one: `198.51.100.7`, `198.51.100.0/24`, either with
 * `:443`; an IPv6 address or range in brackets, `[2001:db8::1]:443`, `[2001:db8::/32]`.
 */
function parseAddressRule(text: string): AddressRule | string {
  let rest = text;
  let port: number | undefined;
  let family: 4 | 6;
  if (rest.startsWith('[')) {
    const close = rest.indexOf(']');
    if (close < 0) return 'an IPv6 address or range goes in brackets: [2001:db8::1]:443';
    const after = rest.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) return 'only :port may follow the brackets';
    if (after) {
      const parsed = parsePort(after.slice(1));
      if (typeof parsed === 'string') return parsed;
      port = parsed;
    }
    rest = rest.slice(1, close);
    family = 6;
  } else {
    if (rest.split(':').length > 2) return 'an IPv6 address or range goes in brackets: [2001:db8::1]:443';
    const colon = rest.indexOf(':');
    if (colon >= 0) {
      const parsed = parsePort(rest.slice(colon + 1));
      if (typeof parsed === 'string') return parsed;
      port = parsed;
      rest = rest.slice(0, colon);
    }
    family = 4;
  }
  const slash = rest.indexOf('/');
  const address = slash < 0 ? rest : rest.slice(0, slash);
  if (isIP(address) !== family) {
    return family === 6 ? 'not an IPv6 address in brackets' : 'not an IPv4 address (an IPv6 one goes in brackets: [2001:db8::1])';
  }
  const bits = family === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(bits) : rest.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(prefixText) || Number(prefixText) > bits) return `the prefix length is 0 to ${bits}`;
  const prefix = Number(prefixText);
  const value = addressValue(address, family);
  const hostBits = (1n << BigInt(bits - prefix)) - 1n;
  if ((value & hostBits) !== 0n) return `${rest} has host bits set: the range is ${formatAddress(value & ~hostBits, family)}/${prefix}`;
  return { family, cidr: `${formatAddress(value, family)}/${prefix}`, ...(port === undefined ? {} : { port }) };
}

function parsePort(text: string): number | string {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65_535) return 'a port is 1 to 65535';
  return Number(text);
}

function addressValue(address: string, family: 4 | 6): bigint {
  if (family === 4) return address.split('.').reduce((n, part) => (n << 8n) | BigInt(part), 0n);
  const [head = '', tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const expand = (parts: string[]) =>
    parts.flatMap((g) => {
      // An embedded IPv4 tail (::ffff:192.0.2.1) is two groups.
      if (!g.includes('.')) return [g];
      const v4 = addressValue(g, 4);
      return [(v4 >> 16n).toString(16), (v4 & 0xffffn).toString(16)];
    });
  const left = expand(groups(head));
  const right = tail === undefined ? [] : expand(groups(tail));
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return all.reduce((n, g) => (n << 16n) | BigInt(`0x${g}`), 0n);
}

function formatAddress(value: bigint, family: 4 | 6): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  // The longest run of zero groups (two at least) as "::", as RFC 5952 writes it.
  let best = { at: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > best.length && j - i >= 2) best = { at: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.at < 0) return groups.join(':');
  return `${groups.slice(0, best.at).join(':')}::${groups.slice(best.at + best.length).join(':')}`;
}

export function egressMode(policy: PolicyRules): EgressMode {
  return typeof policy.egress === 'string' ? policy.egress : 'allow';
}

/** The policy's rules made exact; none for `none` and `all`. */
function egressRules(policy: PolicyRules): (AddressRule | NameRule)[] {
  if (typeof policy.egress === 'string') return [];
  return policy.egress.allow.map((text) => {
    const rule = parseEgressRule(text);
    if (typeof rule === 'string') throw new RangeError(`not an egress rule: ${text}: ${rule}`);
    return rule;
  });
}

/** The policy's address rules. */
export function addressRules(policy: PolicyRules): AddressRule[] {
  return egressRules(policy).filter((rule): rule is AddressRule => 'cidr' in rule);
}

/** The policy's domain rules. */
export function nameRules(policy: PolicyRules): NameRule[] {
  return egressRules(policy).filter((rule): rule is NameRule => 'name' in rule);
}

/** Whether the policy lets the sandbox reach `name` on `port` by name: `all`, or a domain rule covering it on that port or every port. */
export function reachesName(policy: PolicyRules, name: string, port: number): boolean {
  const mode = egressMode(policy);
  if (mode === 'all') return true;
  if (mode === 'none') return false;
  return nameRules(policy).some((rule) => (rule.port === undefined || rule.port === port) && nameRuleCovers(rule, name));
}

/** Whether range `inner` lies within range `outer` (both `address/prefix`, one family), equal included. */
export function cidrWithin(inner: string, outer: string): boolean {
  const [innerAddress = '', innerPrefix] = inner.split('/');
  const [outerAddress = '', outerPrefix] = outer.split('/');
  const family = isIP(innerAddress);
  if (family === 0 || family !== isIP(outerAddress)) return false;
  const bits = family === 4 ? 32 : 128;
  if (Number(innerPrefix) < Number(outerPrefix)) return false;
  const mask = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - Number(outerPrefix))) - 1n);
  return (addressValue(innerAddress, family as 4 | 6) & mask) === (addressValue(outerAddress, family as 4 | 6) & mask);
}
