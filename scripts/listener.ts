// A port for a child process, bound here and handed over by descriptor. Checking that a port is
// free and letting the child bind it later is a race: two `npm start` in the same second both
// found 8787 free, and one of them then stopped, or took the other's web for its own. A socket
// bound here is this launcher's from the first moment; the child listens on the same socket
// (PADDOCK_LISTEN_FD), and whatever answers on the port is this stack's.
import { createServer, type Server } from 'node:net';

export interface HandedListener {
  port: number;
  /** The socket's descriptor in this process, to put in the child's stdio. */
  fd: number;
  /** Drops this process's copy, once the child holds its own. */
  close(): void;
}

/**
 * Binds the first of `ports` that is free on `host` (0: any free port). Undefined when every one
 * is taken; any other failure throws.
 */
export async function bindListener(host: string, ports: number[]): Promise<HandedListener | undefined> {
  for (const port of ports) {
    const server = await bound(host, port);
    if (!server) continue;
    const fd = (server as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) {
      server.close();
      throw new Error('this platform does not expose a listening socket\'s descriptor: set PORT');
    }
    return {
      port: (server.address() as { port: number }).port,
      fd,
      close: () => server.close(),
    };
  }
  return undefined;
}

function bound(host: string, port: number): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    // Connections this process would accept before its copy is closed (a scanner's, in the few
    // milliseconds before the child starts): refused rather than held open unanswered.
    const server = createServer({ pauseOnConnect: true }, (socket) => socket.destroy());
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(undefined) : reject(err)));
    server.listen({ port, host, exclusive: true }, () => resolve(server));
  });
}
