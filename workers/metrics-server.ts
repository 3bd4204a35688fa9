import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** A worker has no API: this small server gives probes and Prometheus something to ask. */
export async function startMetricsServer(registry: Registry, port: number, isHealthy: () => boolean): Promise<{ port: number; server: Server }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    } else if (req.method === 'GET' && path === '/healthz') {
      const ok = isHealthy();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ok' : 'unhealthy' }));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`the worker's metrics port ${port} is taken: set PADDOCK_WORKER_METRICS_PORT to a free one (0 picks any)`)
          : err,
      ),
    );
    server.listen(port, resolve);
  });
  return { port: (server.address() as AddressInfo).port, server };
}
