import { createServer, type Server } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

// A host-wide lock per sandbox, shared by every Paddock process: holding it is listening on an
// abstract unix socket, whose name the kernel frees when the holder closes it or dies. A crashed
// creator therefore never leaves a stale lock behind, which a lock file would.

export async function withLock<T>(name: string, deadline: number, fn: () => Promise<T>): Promise<T> {
  const server = await acquire(name, deadline);
  try {
    return await fn();
  } finally {
    server.close();
  }
}

/** Whether some process holds the lock now. */
export async function isLocked(name: string): Promise<boolean> {
  const server = await tryListen(name);
  server?.close();
  return server === undefined;
}

async function acquire(name: string, deadline: number): Promise<Server> {
  for (let wait = 1; ; wait = Math.min(wait * 2, 25)) {
    const server = await tryListen(name);
    if (server) return server;
    if (Date.now() > deadline) throw new Error(`timed out waiting for the lock ${name}`);
    await delay(wait);
  }
}

function tryListen(name: string): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') resolve(undefined);
      else reject(err);
    });
    server.listen({ path: `\0${name}` }, () => {
      server.unref();
      resolve(server);
    });
  });
}
