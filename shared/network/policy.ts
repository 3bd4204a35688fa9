import { z } from 'zod';
import { EGRESS_MODES, parseEgressRule, type EgressMode } from './rules.ts';

// A sandbox's egress policy (docs/api.md, "Egress policy"): where its programs may connect.
// `none` reaches nothing; `all` reaches whatever is outside the hard floor; `{allow: [...]}`
// reaches the domains, addresses and ranges listed, each with an optional port, and nothing else.
// The hard floor (loopback, private, link-local, metadata, Paddock's own and other sandboxes) is
// the runtime's and holds whatever a policy says.


/** Rules a policy may list: each is a line of the sandbox's filter. */
export const MAX_EGRESS_RULES = 64;

const EgressRule = z
  .string()
  .min(1)
  .max(260)
  .superRefine((text, ctx) => {
    const parsed = parseEgressRule(text);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)}: ${parsed}` });
  })
  .meta({
    description:
      'A domain (its subdomains with *.: *.githubusercontent.com, not the bare name), an IPv4 address or CIDR, or an IPv6 one in brackets, with an optional :port: pypi.org:443, 198.51.100.0/24, [2001:db8::1]:443',
  });

export const NetworkPolicy = z
  .strictObject({
    egress: z.union([
      z.enum(['none', 'all']),
      z.strictObject({
        allow: z.array(EgressRule).min(1).max(MAX_EGRESS_RULES).meta({ description: 'Where its programs may connect (and, for domains, which names its DNS answers); nothing else' }),
      }),
    ]),
  })
  .meta({
    description:
      "Where the sandbox's programs may connect: none, all (outside the hard floor: loopback, private, link-local and metadata ranges, Paddock's own services and other sandboxes), or the listed domains, addresses and ranges",
  });

export type NetworkPolicy = z.infer<typeof NetworkPolicy>;

export const NO_EGRESS: NetworkPolicy = { egress: 'none' };

/** Whether `mode` opens no more than `max` does. */
export function withinEgressMax(mode: EgressMode, max: EgressMode): boolean {
  return EGRESS_MODES.indexOf(mode) <= EGRESS_MODES.indexOf(max);
}

export function samePolicy(a: NetworkPolicy, b: NetworkPolicy): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
