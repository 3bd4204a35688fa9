import { after } from 'node:test';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { startNetnsHost, type NetnsHost } from '../../scripts/netns-host.ts';

// Hosts for the network tests: one outside (scripts/netns-host.ts), removed when the test file
// ends; and listeners on this host's own addresses, which a sandbox must never reach. Needs root.

export type TestHost = NetnsHost;

/** A host outside, on a documentation range, gone when the file's tests are. */
export async function makeTestHost(options: Parameters<typeof startNetnsHost>[0] = {}): Promise<TestHost> {
  const host = await startNetnsHost(options);
  after(() => host.close());
  return host;
}

/** A listener on this host that counts who connects. */
export async function hostListener(address: string): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.end('hello from the host\n');
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  after(() => server.close());
  return { port: (server.address() as AddressInfo).port, connections: () => connections };
}

