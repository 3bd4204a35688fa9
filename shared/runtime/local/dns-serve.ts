import type { RemoteInfo, Socket as UdpSocket } from 'node:dgram';
import type { Socket } from 'node:net';
import { tokenBucket } from './budget.ts';

// DNS served over UDP and over TCP (RFC 7766's framing) for Paddock's resolvers: the local
// runtime's, in each sandbox's namespace (egress-resolver-main.ts), and the Kubernetes egress
// gateway's (kubernetes/gateway/dns.ts).

/** The largest query taken over UDP (EDNS's usual size). */
const UDP_MAX = 4096;
/** Each sandbox's queries: a burst, then so many a second; past them a query is dropped (it is asked again). */
const QUERY_BURST = 200;
const QUERIES_PER_SECOND = 100;

/** One sandbox's budget of queries: whether the next one may be answered. */
export function queryBudget(): () => boolean {
  return tokenBucket(QUERY_BURST, QUERIES_PER_SECOND);
}

/** Queries over UDP, each answered to its sender; one too large, or given no answer, is dropped. */
export function serveDnsOverUdp(udp: UdpSocket, answer: (query: Buffer, from: RemoteInfo) => Promise<Buffer | undefined>): void {
  udp.on('message', (message, from) => {
    if (message.byteLength > UDP_MAX) return;
    void answer(message, from).then((answered) => {
      if (answered) udp.send(answered, from.port, from.address);
    });
  });
  udp.on('error', () => undefined);
}

/** The largest message TCP's framing carries. */
const TCP_MAX = 65_535;
const TCP_IDLE_MS = 10_000;

/** Length-framed queries, one after another; the connection ends when idle, malformed, too long or over budget. */
export function serveDnsOverTcp(socket: Socket, answer: (query: Buffer) => Promise<Buffer | undefined>, admit: () => boolean): void {
  socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
  socket.on('error', () => undefined);
  let held = Buffer.alloc(0);
  let busy = false;
  const next = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    try {
      while (held.byteLength >= 2) {
        const length = held.readUInt16BE(0);
        if (held.byteLength < 2 + length) break;
        const query = held.subarray(2, 2 + length);
        held = held.subarray(2 + length);
        const answered = admit() ? await answer(query) : undefined;
        if (!answered || answered.byteLength > TCP_MAX) return void socket.destroy();
        const framed = Buffer.alloc(2 + answered.byteLength);
        framed.writeUInt16BE(answered.byteLength);
        answered.copy(framed, 2);
        socket.write(framed);
      }
    } finally {
      busy = false;
    }
  };
  socket.on('data', (chunk: Buffer) => {
    if (held.byteLength + chunk.byteLength > TCP_MAX + 2) return void socket.destroy();
    held = Buffer.concat([held, chunk]);
    void next();
  });
  socket.resume();
}
