import type { Socket as UdpSocket } from 'node:dgram';
import type { Server, Socket } from 'node:net';
import type { Upstream } from '../../../network/resolvers.ts';
import { EgressResolver } from '../../local/egress-resolver.ts';
import { serveDnsOverTcp } from '../../local/dns-tcp.ts';
import { tokenBucket } from '../../local/budget.ts';
import { plainAddress, type SandboxesByAddress } from '../../pass-through.ts';

// The gateway's DNS, every sandbox pod's nameserver: each query is answered for the sandbox whose
// pod asked (by its address), as the local runtime's resolver answers one sandbox
// (egress-resolver.ts): a name its policy allows, and a brokered host, with the gateway's own
// address, whose pass-through and broker carry the connection on by name; under `all`, any other
// name with its own addresses (the pod's NetworkPolicy opens those); anything else NXDOMAIN at
// once. A query from an address that is no running sandbox's gets no answer.

/** The largest query taken over UDP (EDNS's usual size). */
const UDP_MAX = 4096;
/** Each sandbox's queries: a burst, then so many a second; past them a query is dropped (it is asked again). */
const QUERY_BURST = 200;
const QUERIES_PER_SECOND = 100;
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
        admit: tokenBucket(QUERY_BURST, QUERIES_PER_SECOND),
      };
      resolvers.set(id, kept);
    }
    if (!kept.admit()) return undefined;
    return kept.resolver.answer(query, transport);
  }

  udp.on('message', (message, from) => {
    if (message.byteLength > UDP_MAX) return;
    void answer(from.address, message, 'udp').then((answered) => {
      if (answered) udp.send(answered, from.port, from.address);
    });
  });
  udp.on('error', () => undefined);
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
