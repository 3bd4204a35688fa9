import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../shared/config.ts';
import { createLogger, type Logger } from '../shared/logger.ts';
import { openOrm } from '../shared/db/orm.ts';
import { QueueEvents } from 'bullmq';
import type { KubeConfig } from '@kubernetes/client-node';
import { createRuntime } from '../shared/runtime/index.ts';
import { createQueueRedis, createRequestRedis, waitForRedis } from '../shared/redis.ts';
import { SANDBOX_QUEUE, createSandboxQueue } from '../shared/jobs/catalogue.ts';
import { createApp, createDeps } from './app.ts';
import type { AppDeps } from './context.ts';
import type { Route } from './routes/route.ts';

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
  const orm = await openOrm(config.DATABASE_URL, config.PADDOCK_DB_POOL_MAX);
  const redis = createRequestRedis(config.REDIS_URL);
  redis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error'));
  await waitForRedis(redis).catch((err: unknown) => log.warn({ err }, 'starting without Redis'));
  // Enqueuing shares the fail-fast connection; job events need a blocking connection of their own.
  const queue = createSandboxQueue(redis, config.PADDOCK_REDIS_PREFIX);
  const eventsRedis = createQueueRedis(config.REDIS_URL);
  eventsRedis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error'));
  const queueEvents = new QueueEvents(SANDBOX_QUEUE, { connection: eventsRedis, prefix: `${config.PADDOCK_REDIS_PREFIX}:bull` });
  queueEvents.setMaxListeners(0); // one listener per waiting request
  queueEvents.on('error', (err) => log.warn({ err: err.message }, 'queue events error'));
  const runtime = createRuntime(config, log, { kubeConfig: options.kubeConfig });
  const deps = createDeps({ config, orm, redis, log, queue, queueEvents, runtime });
  const app = createApp(deps, options.extraRoutes);
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000; // longer than common load balancers' idle timeout
  server.headersTimeout = 66_000;
  server.requestTimeout = 0; // exec and waits can be long; bounded by their own timeouts
  await new Promise<void>((resolve) => server.listen(config.PORT, config.HOST, resolve));
  const { port } = server.address() as AddressInfo;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = setTimeout(() => server.closeAllConnections(), config.PADDOCK_SHUTDOWN_TIMEOUT_SECONDS * 1000);
      await drained;
      clearTimeout(deadline);
      await runtime.close();
      await queueEvents.close();
      await queue.close();
      await orm.close(true);
      redis.disconnect();
      eventsRedis.disconnect();
    })());

  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, server, deps, close };
}
