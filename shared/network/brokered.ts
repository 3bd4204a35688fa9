import { nameRuleCovers, parseEgressRule, reachesName, type NameRule } from './rules.ts';

// Brokered credentials: a secret with `inject` never reaches the sandbox; the egress adds it as a
// header to the sandbox's HTTPS requests for the secret's hosts. No schema library here, for the
// host's egress process (shared/runtime/local/egress-resolver-main.ts), which loads only this.

/** A secret's injection, as stored and shown (never its value). */
export interface Injection {
  /** Domains (`api.example.com`, or `*.example.com` for the names below it), lowercase. */
  hosts: string[];
  /** The header the egress sets, as HTTP names it (`Authorization`). */
  header: string;
  /** The header's value, with `{value}` standing for the secret's. */
  format: string;
}

/** What the egress of one sandbox sets: the header and its whole value on requests for the hosts. */
export interface BrokeredCredential {
  hosts: string[];
  header: string;
  value: string;
}

export const VALUE_PLACEHOLDER = '{value}';

/**
 * Headers no injection may set: those that frame the message or route it (a request smuggled or
 * sent elsewhere), and the hop-by-hop ones the egress drops.
 */
export const UNINJECTABLE_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-connection',
  'expect',
]);

/** An inject host as written, or why it is not one: a domain rule's name, without a port. */
export function parseInjectHost(text: string): NameRule | string {
  const rule = parseEgressRule(text);
  if (typeof rule === 'string') return rule;
  if (!('name' in rule)) return 'a brokered host is a domain (api.example.com or *.example.com), not an address';
  if (rule.port !== undefined) return 'a brokered host names no port: the credential is sent over HTTPS, port 443';
  return rule;
}

/** The host as the egress matches it: lowercase, wildcard kept. */
export function injectHostKey(rule: NameRule): string {
  return rule.wildcard ? `*.${rule.name}` : rule.name;
}

/** Whether one of `hosts` (as injectHostKey writes them) covers `name` (lowercase, no final dot). */
export function hostsCover(hosts: readonly string[], name: string): boolean {
  return hosts.some((host) => nameRuleCovers(host.startsWith('*.') ? { name: host.slice(2), wildcard: true } : { name: host, wildcard: false }, name));
}

/** The header's whole value: the format with the secret's value in it. */
export function injectedValue(format: string, value: string): string {
  return format.replace(VALUE_PLACEHOLDER, () => value);
}

/**
 * The headers the egress sets on a request for `name`: the credentials whose hosts cover it, the
 * later one winning a header (the sandbox's own secrets come after the account's).
 */
export function headersFor(credentials: readonly BrokeredCredential[], name: string): Map<string, { header: string; value: string }> {
  const headers = new Map<string, { header: string; value: string }>();
  for (const credential of credentials) {
    if (hostsCover(credential.hosts, name)) headers.set(credential.header.toLowerCase(), { header: credential.header, value: credential.value });
  }
  return headers;
}

/** Whether a policy lets the sandbox reach `name` over HTTPS: `all`, or a domain rule on 443 or every port. */
export function policyReaches(policy: Parameters<typeof reachesName>[0], name: string): boolean {
  return reachesName(policy, name, 443);
}
