import type { Socket } from 'node:net';

// DNS over TCP (RFC 7766's framing) for Paddock's resolvers: the local runtime's, in each
// sandbox's namespace (egress-resolver-main.ts), and the Kubernetes egress gateway's.

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
