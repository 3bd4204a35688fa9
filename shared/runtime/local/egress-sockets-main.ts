import { createSocket } from 'node:dgram';
import { createServer, type Server } from 'node:net';

// Run by the host's resolver (egress-resolver-main.ts) under nsenter, in a sandbox's network
// namespace: binds the resolver's UDP socket and TCP listener there, the pass-through's listeners
// (egress-filter.ts's PASS), and the broker's TCP listener when asked (egress-broker.ts), and
// hands them over its IPC channel, then exits. The resolver itself stays in the host's namespace,
// where it asks the upstream servers and the sandbox's filter does not apply. Its arguments: the
// resolver's address and port, the pass-through's address and ports (comma-separated), then the broker's.

const [address = '', port = '', passAddress = '', passPorts = '', brokerAddress, brokerPort] = process.argv.slice(2);
const fail = () => process.exit(1);

function listen(at: string, on: number): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer({ pauseOnConnect: true });
    server.on('error', fail);
    server.listen(on, at, () => resolve(server));
  });
}

function send(kind: string, handle: Server | ReturnType<typeof createSocket>): Promise<void> {
  return new Promise((resolve) => process.send!({ kind }, handle, (err: Error | null) => (err ? fail() : resolve())));
}

const udp = createSocket('udp4');
udp.on('error', fail);
udp.bind(Number(port), address, () => {
  void (async () => {
    const tcp = await listen(address, Number(port));
    const passes = await Promise.all(passPorts.split(',').filter(Boolean).map(async (on) => ({ on, server: await listen(passAddress, Number(on)) })));
    const https = brokerAddress && brokerPort ? await listen(brokerAddress, Number(brokerPort)) : undefined;
    await send('udp', udp);
    await send('tcp', tcp);
    for (const { on, server } of passes) await send(`pass${on}`, server);
    if (https) await send('https', https);
    process.exit(0);
  })();
});
