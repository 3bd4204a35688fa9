import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { ApiError, problemDocument } from '../shared/errors.ts';
import type { AddressInfo, Socket } from 'node:net';
import type { Config } from '../shared/config.ts';
import { createLogger, type Logger } from '../shared/logger.ts';
import { closeOrm, endPoolWithin, openOrm, openReadPool } from '../shared/db/orm.ts';
import { QueueEvents } from 'bullmq';
import type { KubeConfig } from '@kubernetes/client-node';
import { createRuntime } from '../shared/runtime/index.ts';
import { createQueueRedis, createRequestRedis } from '../shared/redis.ts';
import { SANDBOX_QUEUE } from '../shared/jobs/catalogue.ts';
import { startQueues } from '../shared/jobs/ready-queue.ts';
import { EventHub } from './services/events/hub.ts';
import { createApp, createDeps } from './app.ts';
import { SECURITY_HEADERS } from './middleware/security-headers.ts';
import type { AppDeps } from './context.ts';
import { isWebSocketUpgrade, serveUpgrades } from './services/terminal/upgrade.ts';
import { closeTerminals } from './services/terminal/open.ts';
import { LingeringClose } from './lingering-close.ts';
import { ConnectionAllowance } from './connection-allowance.ts';
import type { Route } from './routes/route.ts';
import { ConnectionSlots } from './services/previews/connection-slots.ts';
import { PreviewProxy } from './services/previews/proxy.ts';
import { startResends } from '../shared/secrets/brokering.ts';

/** How often an API process takes the sandboxes whose egress lost its brokered credentials. */
const CREDENTIAL_RESENDS_EVERY_MS = 2000;

export interface RunningApi {
  url: string;
  server: Server;
  deps: AppDeps;
  /** Stops accepting, lets in-flight requests finish, then closes the ORM and Redis. */
  close(): Promise<void>;
}

export async function startApi(
  config: Config,
  options: { log?: Logger; extraRoutes?: Route[]; kubeConfig?: KubeConfig } = {},
): Promise<RunningApi> {
  const log = options.log ?? createLogger(config.PADDOCK_LOG_LEVEL, 'web');
  const orm = await openOrm(config.DATABASE_URL, config.PADDOCK_DB_POOL_MAX, 'fixed');
  const redis = createRequestRedis(config.REDIS_URL);
  // Enqueuing fails fast too, on a connection of its own: BullMQ defines its scripts (dozens) on
  // the connection it is given, and ioredis copies every script a connection has onto each
  // pipeline it makes, one per auto-pipelined batch. On the request path's connection every
  // authentication paid some 15 KB of garbage for them (docs/benchmarks.md, "Measurements behind the design").
  // Job events need a blocking connection of their own.
  const queueRedis = createRequestRedis(config.REDIS_URL);
  const eventsRedis = createQueueRedis(config.REDIS_URL);
  for (const r of [redis, queueRedis, eventsRedis]) r.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error'));
  // Before the queues: loading the Kubernetes client holds the event loop for a while.
  const runtime = await createRuntime(config, log, { kubeConfig: options.kubeConfig });
  // Both fail-fast connections are waited for together: start-up pays one connect, not two.
  const { queue, webhookQueue } = await startQueues(queueRedis, config.PADDOCK_REDIS_PREFIX, log, [redis]);
  const eventHub = new EventHub(config, log);
  const queueEvents = new QueueEvents(SANDBOX_QUEUE, { connection: eventsRedis, prefix: `${config.PADDOCK_REDIS_PREFIX}:bull` });
  queueEvents.setMaxListeners(0); // one listener per waiting request
  queueEvents.on('error', (err) => log.warn({ err: err.message }, 'queue events error'));
  // Connects lazily: the API starts, and answers 503, while PostgreSQL is down.
  const pg = openReadPool(config.DATABASE_URL, config.PADDOCK_DB_POOL_MAX);
  pg.on('error', (err: Error) => log.warn({ err: err.message }, 'database connection error'));
  const deps = createDeps({ config, orm, pg, redis, log, queue, queueEvents, runtime, webhookQueue, eventHub });
  const app = createApp(deps, options.extraRoutes);
  // The headers and request timeouts are checked this often (Node's default, 30 s, would let a
  // slow client hold its connection that much longer).
  const lingering = new LingeringClose({ maxBytes: config.PADDOCK_HTTP_LINGER_BYTES, maxMs: config.PADDOCK_HTTP_LINGER_SECONDS * 1000 });
  // A request whose Host is a preview's goes to the sandbox's port (services/previews/), never into the app.
  const slots = new ConnectionSlots(redis, config.PADDOCK_REDIS_PREFIX, config.PADDOCK_PREVIEW_MAX_CONNECTIONS);
  const previews = new PreviewProxy({ pg, runtime, slots, views: deps.views, transfers: deps.bulkTransfers, log, domain: config.PADDOCK_PREVIEW_DOMAIN, idleMs: config.PADDOCK_PREVIEW_IDLE_TIMEOUT_SECONDS * 1000 });
  // Brokered credentials a sandbox's egress lost (started again), listed by the workers' sweep.
  const resends = startResends({ ...deps, redis }, config.PADDOCK_REDIS_PREFIX, CREDENTIAL_RESENDS_EVERY_MS);
  const appHandler = app.callback();
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const target = previews.target(req);
    if (target) previews.serve(req, res, target);
    else void appHandler(req, res);
  };
  const server = createServer({ connectionsCheckingInterval: 1000, shouldUpgradeCallback: isWebSocketUpgrade }, boundPipelining(lingering.wrap(handle)));
  server.on('connection', (socket: Socket) => lingering.arm(socket));
  guardConnections(server, config);
  // WebSocket upgrades (the terminal) go through the app like any request (services/terminal/upgrade.ts).
  const appUpgrades = serveUpgrades(appHandler);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const target = previews.target(req);
    if (target) previews.upgrade(req, socket, head, target);
    else appUpgrades(req, socket, head);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket));
  await new Promise<void>((resolve, reject) => {
    const listening = () => {
      server.off('error', reject);
      resolve();
    };
    server.once('error', reject);
    if (config.PADDOCK_LISTEN_FD !== undefined) server.listen({ fd: config.PADDOCK_LISTEN_FD }, listening);
    else server.listen(config.PORT, config.HOST, listening);
  });
  const { port, address } = server.address() as AddressInfo;
  const host = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Event streams never end by themselves: ended here, their clients resume elsewhere (Last-Event-ID).
      eventHub.close();
      resends.stop();
      // Terminals too: their clients reconnect to another replica; and what is open through previews.
      closeTerminals();
      previews.close();
      slots.close();
      const deadline = setTimeout(() => server.closeAllConnections(), config.PADDOCK_SHUTDOWN_TIMEOUT_SECONDS * 1000);
      await drained;
      clearTimeout(deadline);
      deps.keySessions.close();
      await runtime.close();
      await queueEvents.close();
      await queue.close();
      await webhookQueue.close();
      await closeOrm(orm, log);
      await endPoolWithin('read', pg.end(), pg, log);
      redis.disconnect();
      queueRedis.disconnect();
      eventsRedis.disconnect();
    })());

  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, server, deps, close };
}

/**
 * What one client may hold of the server: headers within seconds, a whole request (body included;
 * answering may take longer, exec and waits are bounded by their own timeouts) within the request
 * timeout, a short keep-alive, and a cap on connections in all. Per client address, connections
 * past an allowance must authenticate to be served, and per account too there is an allowance
 * (api/connection-allowance.ts). Behind a proxy every connection comes from the proxy, so those
 * allowances are the ingress's to apply (docs/deploy.md).
 */
function guardConnections(server: Server, config: Config): void {
  server.headersTimeout = config.PADDOCK_HTTP_HEADERS_TIMEOUT_SECONDS * 1000;
  server.requestTimeout = config.PADDOCK_HTTP_REQUEST_TIMEOUT_SECONDS * 1000;
  server.keepAliveTimeout = config.PADDOCK_HTTP_KEEPALIVE_TIMEOUT_SECONDS * 1000;
  server.maxConnections = config.PADDOCK_HTTP_MAX_CONNECTIONS;
  if (config.PADDOCK_TRUST_PROXY) return;
  const allowance = new ConnectionAllowance({ perAddress: config.PADDOCK_HTTP_MAX_CONNECTIONS_PER_IP, perAccount: config.PADDOCK_HTTP_MAX_CONNECTIONS_PER_ACCOUNT });
  server.on('connection', (socket: Socket) => allowance.admit(socket));
}

// Pipelined requests that arrive in one read are parsed and dispatched in one turn of the event
// loop: 20,000 `GET /healthz` written at once into one socket held it for seconds, every other
// client waiting. No client needs many in flight on one connection (browsers and undici send one
// at a time), so past this many the connection is closed, and what it still had queued is
// dropped at the cost of parsing it, never reaching the app.
export const MAX_PIPELINED_PER_CONNECTION = 16;

function boundPipelining(handle: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
  const inFlight = new WeakMap<Socket, number>();
  return (req, res) => {
    const socket = req.socket;
    if (socket.destroyed) return;
    const count = (inFlight.get(socket) ?? 0) + 1;
    if (count > MAX_PIPELINED_PER_CONNECTION) {
      socket.destroy();
      return;
    }
    inFlight.set(socket, count);
    res.once('close', () => inFlight.set(socket, (inFlight.get(socket) ?? 1) - 1));
    handle(req, res);
  };
}

/** How long a connection refused by the parser has to read its answer before it is cut. */
const CLIENT_ERROR_CLOSE_MS = 2000;

/**
 * Requests Node refuses before Koa sees them (oversized headers, malformed HTTP) still get a
 * problem document and the security headers rather than a bare status line.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  const refusal = tooLarge
    ? new ApiError('headers_too_large', 'The request headers are larger than the server accepts.')
    : new ApiError('invalid_request', 'The request is not valid HTTP.');
  const status = refusal.status;
  const requestId = `req_${randomBytes(12).toString('hex')}`;
  const body = JSON.stringify(problemDocument(refusal, requestId));
  // The answer to a HEAD request has no content, even here (a client would read it as the next answer).
  const head = (err as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
  socket.end(
    `HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
      'Content-Type: application/problem+json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      Object.entries(SECURITY_HEADERS)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      'Connection: close\r\n\r\n' +
      (head ? '' : body),
  );
  // Ended, the connection is only half closed: a client that neither reads its answer nor closes
  // (one that timed out trickling its headers) would hold it for good.
  const timer = setTimeout(() => socket.destroy(), CLIENT_ERROR_CLOSE_MS);
  socket.once('close', () => clearTimeout(timer));
}
