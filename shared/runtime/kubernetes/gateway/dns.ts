import type { Socket as UdpSocket } from 'node:dgram';
import type { Server, Socket } from 'node:net';
import type { Upstream } from '../../../network/resolvers.ts';
import { EgressResolver } from '../../local/egress-resolver.ts';
import { queryBudget, serveDnsOverTcp, serveDnsOverUdp } from '../../local/dns-serve.ts';
import { plainAddress, type SandboxesByAddress } from '../../pass-through.ts';

// The gateway's DNS, every sandbox pod's nameserver: each query is answered for the sandbox whose
// pod asked (by its address), as the local runtime's resolver answers one sandbox
// (egress-resolver.ts): a name its policy allows, and a brokered host, with the gateway's own
// address, whose pass-through and broker carry the connection on by name; under `all`, any other
// name with its own addresses (the pod's NetworkPolicy opens those); anything else NXDOMAIN at
// once. A query from an address that is no running sandbox's gets no answer.

/** Sandboxes with a resolver kept at once; past it the memory starts again. */
const RESOLVERS_KEPT = 4096;

export interface GatewayDnsDeps {
  sandboxes: SandboxesByAddress;
  upstreams: readonly Upstream[];
  /** The gateway's Service address: what allowed names are answered with. */
  via: string;
  /** A name the sandbox's policy refused was asked for. */
  refused(sandboxId: string): void;
}

/** Answers on both sockets; the returned close stops them. */
export function serveGatewayDns(udp: UdpSocket, tcp: Server, deps: GatewayDnsDeps): () => void {
  const resolvers = new Map<string, { resolver: EgressResolver; admit: () => boolean }>();

  /** The answer for the pod at `address`: undefined for no sandbox's address, or a query dropped. */
  async function answer(address: string | undefined, query: Buffer, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    const source = plainAddress(address);
    const sandbox = source === undefined ? undefined : await deps.sandboxes.byAddress(source);
    if (!sandbox || source === undefined) return undefined;
    let kept = resolvers.get(sandbox.id);
    if (!kept) {
      if (resolvers.size >= RESOLVERS_KEPT) resolvers.clear();
      const id = sandbox.id;
      kept = {
        resolver: new EgressResolver({
          installed: async () => {
            const now = await deps.sandboxes.byAddress(source);
            return now?.id === id ? now.installed : undefined;
          },
          upstreams: deps.upstreams,
          // Nothing is opened: the pod reaches names through the gateway alone.
          open: async () => undefined,
          refused: () => deps.refused(id),
          via: deps.via,
        }),
        admit: queryBudget(),
      };
      resolvers.set(id, kept);
    }
    if (!kept.admit()) return undefined;
    return kept.resolver.answer(query, transport);
  }

  serveDnsOverUdp(udp, (query, from) => answer(from.address, query, 'udp'));
  tcp.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    serveDnsOverTcp(socket, (query) => answer(address, query, 'tcp'), () => true);
  });
  tcp.on('error', () => undefined);
  return () => {
    udp.close();
    tcp.close();
  };
}
