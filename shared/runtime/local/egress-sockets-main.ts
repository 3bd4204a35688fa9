import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

// Run by the host's resolver (egress-resolver-main.ts) under nsenter, in a sandbox's network
// namespace: binds the resolver's UDP socket and TCP listener there and hands both over its IPC
// channel, then exits. The resolver itself stays in the host's namespace, where it asks the
// upstream servers and the sandbox's filter does not apply. Its arguments: the address and port.

const [address = '', port = ''] = process.argv.slice(2);
const fail = () => process.exit(1);
const udp = createSocket('udp4');
udp.on('error', fail);
udp.bind(Number(port), address, () => {
  const tcp = createServer({ pauseOnConnect: true });
  tcp.on('error', fail);
  tcp.listen(Number(port), address, () => {
    process.send!({ kind: 'udp' }, udp, (err: Error | null) => {
      if (err) return fail();
      process.send!({ kind: 'tcp' }, tcp, (err2: Error | null) => (err2 ? fail() : process.exit(0)));
    });
  });
});
