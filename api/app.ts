import Koa from 'koa';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Pool } from 'pg';
import type { Queue, QueueEvents } from 'bullmq';
import type { SandboxRuntime } from '../shared/runtime/types.ts';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { AppDeps, AppState } from './context.ts';
import { ApiKeyStore } from './auth/api-key-store.ts';
import { KeySessions } from './auth/key-sessions.ts';
import { TerminalTickets } from './auth/terminal-tickets.ts';
import { createPasswordHasher } from './auth/passwords.ts';
import { createDashboardTokens } from './auth/jwt.ts';
import { TokenBuckets } from './ratelimit/token-bucket.ts';
import { InFlightLeases } from './ratelimit/in-flight.ts';
import { createApiMetrics } from './metrics.ts';
import { secretsCipher } from '../shared/secrets/opening.ts';
import { requestFrame } from './middleware/request-frame.ts';
import { OutputBudget } from './services/exec/output-budget.ts';
import { BulkTransfers } from './services/bulk-transfers.ts';
import { OpenedSecretsCache } from '../shared/secrets/opened.ts';
import { mountRoutes } from './routes/mount.ts';
import { ShapedRouter } from './routes/shaped-router.ts';
import { allRoutes } from './routes/index.ts';
import type { Route } from './routes/route.ts';
import { mountOperationalRoutes } from './routes/operational/index.ts';
import { EventAnnouncer } from '../shared/events/announce.ts';
import { ReadViews } from '../shared/cache/read-views.ts';
import { webhookCipher } from '../shared/webhooks/secrets.ts';
import type { EventHub } from './services/events/hub.ts';
import { enqueueAll } from '../shared/jobs/catalogue.ts';
import { SandboxEngine } from '../shared/sandboxes/engine.ts';
import { PgSandboxStore } from '../shared/sandboxes/pg-store.ts';
import { sandboxWatcher } from './services/sandbox-watch.ts';
import { Snapshots } from '../shared/snapshots/snapshots.ts';
import { snapshotStore } from '../shared/snapshots/store.ts';

export interface AppParts {
  config: Config;
  orm: MikroORM;
  pg: Pool;
  redis: Redis;
  log: Logger;
  queue: Queue;
  queueEvents: QueueEvents;
  runtime: SandboxRuntime;
  webhookQueue: Queue;
  eventHub: EventHub;
}

export function createDeps({ config, orm, pg, redis, log, queue, queueEvents, runtime, webhookQueue, eventHub }: AppParts): AppDeps {
  const jwtSecret = config.PADDOCK_JWT_SECRET ?? ephemeralSecret(log);
  const views = new ReadViews(redis, config.PADDOCK_REDIS_PREFIX, config.PADDOCK_READ_CACHE_SECONDS);
  const metrics = createApiMetrics();
  // The lookups and the checks of open requests share the request path's connection, so each
  // check and lookup reaches Redis in the order it was sent (auth/key-sessions.ts relies on it).
  const apiKeys = new ApiKeyStore(redis, config.PADDOCK_REDIS_PREFIX, config.PADDOCK_API_KEY_CACHE_SECONDS, log);
  const events = new EventAnnouncer(webhookQueue, redis, config.PADDOCK_REDIS_PREFIX, log, views);
  // Read at each use: the queue is the deps' own, whatever it is then.
  const snapshots = new Snapshots({ em: orm.em, runtime, store: snapshotStore(config), announcer: events, log, jobs: { add: (jobs) => enqueueAll(deps.queue, jobs) } }, config);
  const deps: AppDeps = {
    config,
    orm,
    pg,
    redis,
    log,
    buckets: new TokenBuckets(redis, config.PADDOCK_REDIS_PREFIX),
    inFlight: new InFlightLeases(redis, config.PADDOCK_REDIS_PREFIX),
    apiKeys,
    keySessions: new KeySessions(apiKeys, () => orm.em.fork(), log),
    terminalTickets: new TerminalTickets(redis, config.PADDOCK_REDIS_PREFIX, config.PADDOCK_TERMINAL_TICKET_SECONDS),
    passwords: createPasswordHasher(config.PADDOCK_SCRYPT_LOG_N),
    tokens: createDashboardTokens(jwtSecret, config.PADDOCK_JWT_TTL_SECONDS, config.PADDOCK_JWT_SECRET_PREVIOUS),
    metrics,
    bulkTransfers: new BulkTransfers(config.PADDOCK_BULK_TURN_MS, () => metrics.bulkWaits.inc()),
    outputBudget: new OutputBudget(config.PADDOCK_EXEC_OUTPUT_BYTES_PER_SECOND, config.PADDOCK_EXEC_OUTPUT_BURST_BYTES),
    openedSecrets: new OpenedSecretsCache(),
    queue,
    queueEvents,
    runtime,
    secretCipher: secretsCipher(config),
    webhookQueue,
    views,
    events,
    eventHub,
    webhookCipher: webhookCipher(config),
    sandboxes: new SandboxEngine(
      {
        store: new PgSandboxStore(orm, events, pg),
        // Read at each use: the queue is the deps' own, whatever it is then.
        queue: { add: (jobs) => enqueueAll(deps.queue, jobs), remove: (jobIds) => Promise.all(jobIds.map((jobId) => deps.queue.remove(jobId))) },
        announcer: events,
        runtime,
        watcher: sandboxWatcher(eventHub, queueEvents),
        clock: { now: () => new Date() },
        log,
        snapshots,
      },
      config,
    ),
    snapshots,
  };
  return deps;
}

function ephemeralSecret(log: Logger): string {
  log.warn('PADDOCK_JWT_SECRET is not set: using a random one; tokens will not survive a restart or work across replicas');
  return randomBytes(32).toString('hex');
}

export function createApp(deps: AppDeps, extraRoutes: Route[] = []): Koa<AppState> {
  const app = new Koa<AppState>({ proxy: deps.config.PADDOCK_TRUST_PROXY, maxIpsCount: 1 });
  app.silent = true; // errors are logged by errorHandler, once, with the request id
  app.use(
    requestFrame({
      orm: deps.orm,
      log: deps.log,
      metrics: deps.metrics,
      writeIdleMs: deps.config.PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS * 1000,
    }),
  );

  const router = new ShapedRouter();
  mountOperationalRoutes(router, deps);
  mountRoutes(router, [...allRoutes, ...extraRoutes], deps);
  app.use(router.middleware());
  return app;
}
