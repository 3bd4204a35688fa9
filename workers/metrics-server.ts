import { createServer, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { ApiError, problemDocument } from '../shared/errors.ts';
import { sameSecret } from '../shared/same-secret.ts';

export interface MetricsServerOptions {
  port: number;
  /** The interface to listen on: loopback unless the operator opens it (a container's own network). */
  host: string;
  /** When set, /metrics wants it as a bearer token, as the API's /metrics does; /healthz stays open for probes. */
  token?: string;
}

/** A worker has no API: this small server gives probes and Prometheus something to ask. */
export async function startMetricsServer(registry: Registry, options: MetricsServerOptions, isHealthy: () => boolean): Promise<{ port: number; server: Server }> {
  const { port, host, token } = options;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      if (token && !sameSecret(req.headers.authorization ?? '', `Bearer ${token}`)) {
        refuse(res, new ApiError('invalid_credential', 'Send the metrics token as "Authorization: Bearer <token>".'));
        return;
      }
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
    server.listen(port, host, resolve);
  });
  return { port: (server.address() as AddressInfo).port, server };
}

function refuse(res: ServerResponse, err: ApiError): void {
  const body = JSON.stringify(problemDocument(err, `req_${randomBytes(12).toString('hex')}`));
  res.writeHead(err.status, { 'content-type': 'application/problem+json' }).end(body);
}
