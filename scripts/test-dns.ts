import { createSocket } from 'node:dgram';
import { createServer, type AddressInfo } from 'node:net';

// A DNS server of the tests' and benchmarks' own on this host's loopback (UDP and TCP, one port), answering A
// records from a table the test sets (PADDOCK_EGRESS_RESOLVERS points Paddock's resolvers here),
// NXDOMAIN for any other name; it records every name it was asked. Written from RFC 1035 here,
// apart from the resolver's own parser, so that one does not vouch for the other.

export interface TestDns {
  /** `127.0.0.1:<port>`, as PADDOCK_EGRESS_RESOLVERS takes it. */
  address: string;
  /** The A records `name` answers with (none: NXDOMAIN), each with `ttl`. */
  set(name: string, addresses: string[], ttl?: number): void;
  /** Every name asked so far, lowercase. */
  asked(): string[];
  close(): void;
}

export async function startTestDns(): Promise<TestDns> {
  const records = new Map<string, { addresses: string[]; ttl: number }>();
  const asked: string[] = [];
  const answer = (query: Buffer): Buffer | undefined => {
    if (query.byteLength < 12) return undefined;
    const labels: string[] = [];
    let at = 12;
    while (at < query.byteLength && query[at] !== 0) {
      const length = query[at]!;
      labels.push(query.toString('latin1', at + 1, at + 1 + length).toLowerCase());
      at += 1 + length;
    }
    const end = at + 5;
    if (end > query.byteLength) return undefined;
    const name = labels.join('.');
    if (asked.length < 10_000) asked.push(name);
    const type = query.readUInt16BE(at + 1);
    const record = records.get(name);
    const addresses = record && type === 1 ? record.addresses : [];
    const head = Buffer.alloc(12);
    query.copy(head, 0, 0, 2);
    head.writeUInt16BE(0x8180 | (record ? 0 : 3), 2);
    head.writeUInt16BE(1, 4);
    head.writeUInt16BE(addresses.length, 6);
    const answers = addresses.map((address) => {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // the question's name
      rr.writeUInt16BE(1, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(record!.ttl, 6);
      rr.writeUInt16BE(4, 10);
      address.split('.').forEach((part, i) => rr.writeUInt8(Number(part), 12 + i));
      return rr;
    });
    return Buffer.concat([head, query.subarray(12, end), ...answers]);
  };

  const serveTcp = createServer((socket) => {
    let held = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      held = Buffer.concat([held, chunk]);
      while (held.byteLength >= 2 && held.byteLength >= 2 + held.readUInt16BE(0)) {
        const reply = answer(held.subarray(2, 2 + held.readUInt16BE(0)));
        held = held.subarray(2 + held.readUInt16BE(0));
        if (!reply) return void socket.destroy();
        const length = Buffer.alloc(2);
        length.writeUInt16BE(reply.byteLength);
        socket.write(Buffer.concat([length, reply]));
      }
    });
  });
  let closeUdp = () => undefined as void;
  // One port for both: a UDP port whose TCP twin is free too.
  for (let tries = 0; ; tries++) {
    const udp = createSocket('udp4');
    udp.on('message', (query, from) => {
      const reply = answer(query);
      if (reply) udp.send(reply, from.port, from.address);
    });
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    const port = udp.address().port;
    const listening = await new Promise<boolean>((resolve) => {
      serveTcp.once('error', () => resolve(false));
      serveTcp.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (listening) {
      closeUdp = () => udp.close();
      break;
    }
    udp.close();
    if (tries > 20) throw new Error('no port free for UDP and TCP both');
  }
  const tcp = serveTcp;
  return {
    address: `127.0.0.1:${(tcp.address() as AddressInfo).port}`,
    set: (name, addresses, ttl = 60) => void records.set(name.toLowerCase(), { addresses, ttl }),
    asked: () => [...asked],
    close: () => {
      closeUdp();
      tcp.close();
    },
  };
}

/**
 * Python for programs in a sandbox that ask DNS themselves (the tests' and benchmarks'):
 * `query(i, name)`, a query of type A with id `i` for `name`, or for a random name under
 * example.org; and `drain(sock)`, the answers waiting on a non-blocking socket, read and counted.
 */
export const PYTHON_DNS = String.raw`
import os, struct
def query(i, name=None):
    name = name or os.urandom(4).hex() + '.example.org'
    labels = b''.join(bytes([len(p)]) + p.encode() for p in name.split('.'))
    return struct.pack('>HHHHHH', i & 0xffff, 0x0100, 1, 0, 0, 0) + labels + b'\0' + struct.pack('>HH', 1, 1)
def drain(sock):
    n = 0
    try:
        while True:
            sock.recv(512)
            n += 1
    except BlockingIOError:
        pass
    return n
`;
