import { z } from 'zod';
import { egressResolvers } from '../shared/config.ts';
import { GATEWAY_PORTS } from '../shared/runtime/kubernetes/egress-gateway.ts';

// The egress gateway's settings (workers/egress-gateway.ts): a few of Paddock's own, read as the
// other roles read them (docs/configuration.md), and its own listening ones. It has no database,
// no Redis and none of the API's secrets.

const port = z.string().regex(/^\d{1,5}$/).transform(Number).pipe(z.number().int().max(65_535));

const schema = z.object({
  PADDOCK_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PADDOCK_KUBE_NAMESPACE: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: 'expected a namespace name' }).default('paddock-sandboxes'),
  /** Its own Service, as the other roles name it: what allowed names are answered with. */
  PADDOCK_EGRESS_GATEWAY: z.string().min(1, { error: "expected the egress gateway Service's address or name" }),
  PADDOCK_EGRESS_RESOLVERS: egressResolvers,
  PADDOCK_EGRESS_UPSTREAM_CA: z.string().optional(),
  /** The authority's Secret as mounted: ca.pem, ca.key and leaf.key; without them nothing is brokered. */
  PADDOCK_EGRESS_CA_DIR: z.string().default('/etc/paddock/egress-ca'),
  PADDOCK_EGRESS_GATEWAY_LISTEN: z.string().default('0.0.0.0'),
  /** Its DNS, HTTP and HTTPS ports (its Service maps 53, 80 and 443 onto them). */
  PADDOCK_EGRESS_GATEWAY_PORTS: z
    .string()
    .default(`${GATEWAY_PORTS.dns},${GATEWAY_PORTS.http},${GATEWAY_PORTS.https}`)
    .transform((text) => text.split(',').map((p) => p.trim()) as [string, string, string])
    .pipe(z.tuple([port, port, port])),
  PADDOCK_SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().int().min(1).default(25),
});

export type GatewayConfig = z.infer<typeof schema>;

/** The settings, or an error naming each bad variable. */
export function parseGatewayConfig(env: Record<string, string | undefined>): GatewayConfig {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  throw new Error(`Invalid configuration:\n${parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}`);
}
