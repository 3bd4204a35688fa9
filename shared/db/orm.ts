import { MikroORM, type EntityManager, type Options } from '@mikro-orm/postgresql';
import { entities } from './entities.ts';
import pg from 'pg';
import type { Logger } from '../logger.ts';
import { releaseOnFailedBegin } from './failed-begin.ts';

export type { MikroORM };

export function ormOptions(databaseUrl: string, poolMax = 10, pool: PoolShape = 'grows'): Options {
  // The URL's application_name names the ORM's connections too (the ORM reads only host, port,
  // user, password and database from it): pg_stat_activity then tells each process's apart.
  const applicationName = new URL(databaseUrl).searchParams.get('application_name');
  return {
    clientUrl: databaseUrl,
    entities,
    discovery: { warnWhenNoEntities: false },
    pool: { min: pool === 'fixed' ? poolMax : warmConnections(poolMax), max: poolMax },
    // Queries fail instead of waiting forever when the database is unreachable or stuck.
    driverOptions: {
      connectionTimeoutMillis: 3000,
      statement_timeout: 30_000,
      query_timeout: 35_000,
      onPoolCreated: (created: pg.Pool) => {
        releaseOnFailedBegin(created);
        trackClients(created);
      },
      ...(applicationName ? { application_name: applicationName } : {}),
    },
    debug: false,
  };
}

/**
 * `fixed`: every connection opened at start and none closed for being idle, as the read pool's
 * (openReadPool); an API process's ORM pool is so. `grows`: a few kept open, more opened on demand.
 */
export type PoolShape = 'fixed' | 'grows';

/**
 * Connections a growing pool keeps open however idle it is. A new one costs a TCP handshake, a password
 * exchange and a backend process: milliseconds on a quiet host, and up to a second on a busy one
 * (`npm run bench:load`: a GET that found its web's pool empty waited 995 ms for its connection).
 */
export function warmConnections(max: number): number {
  return Math.min(2, max);
}

/**
 * A small pool of our own for the few hot reads that skip the ORM (prepared statements on
 * GET /v1/account and every sandbox route's first read). It is not the ORM's pool, whose
 * connections the ORM manages for its own session handling.
 *
 * Its size is fixed: every connection is opened at start, in the background (a process whose
 * database is down still starts, and answers 503), and none is closed for being idle. A pool that
 * grows on demand lets a burst of requests, a stranger's included, fork PostgreSQL backends while
 * it lasts: in the abuse bench, 230 execs at once opened 8 connections that cost PostgreSQL 36 to
 * 45 ms of CPU each, on the two cores every tenant's commands share (docs/benchmarks.md, "Measurements behind the design").
 */
export function openReadPool(databaseUrl: string, max = 10): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    min: max,
    connectionTimeoutMillis: 3000,
    statement_timeout: 30_000,
    query_timeout: 35_000,
  });
  trackClients(pool);
  openWhole(pool, max);
  return pool;
}

/** Each pool's open connections, for endPoolWithin to end those never given back. */
const clientsOf = new WeakMap<pg.Pool, Set<pg.Client>>();

function trackClients(pool: pg.Pool): void {
  const clients = new Set<pg.Client>();
  clientsOf.set(pool, clients);
  pool.on('connect', (client) => void clients.add(client));
  pool.on('remove', (client) => void clients.delete(client));
}

/**
 * Opens `size` connections in the background and gives each back as soon as it is open. Not once
 * all are: a pool ended meanwhile never answers a connect still queued, and the ones already
 * open, never given back, would keep the process from exiting.
 */
export function openWhole(pool: pg.Pool, size: number): void {
  for (let i = 0; i < size; i++) {
    pool.connect().then(
      (client) => client.release(),
      () => undefined,
    );
  }
}

/** The ORM's own pg pool: for statements the ORM cannot send (batches, named statements), on its connections. */
export async function ormPool(em: EntityManager): Promise<pg.Pool> {
  return (await em.getConnection().getNativeClient()) as pg.Pool;
}

/**
 * A fixed pool (an API process's) is opened whole in the background, on the pool the ORM holds
 * once open: a process whose database is down still starts. Under `npm run bench:load` a destroy
 * whose web's ORM pool opened a connection on demand waited 3 s for PostgreSQL to start its
 * backend on the saturated cores, and answered 503 (docs/benchmarks.md,
 * "Measurements behind the design").
 */
export async function openOrm(databaseUrl: string, poolMax = 10, pool: PoolShape = 'grows'): Promise<MikroORM> {
  const orm = await MikroORM.init(ormOptions(databaseUrl, poolMax, pool));
  if (pool === 'fixed') {
    // The pool the ORM holds now, before anyone can close it: asked for after a close, the ORM
    // would open a new one, whose connections nothing ends (a test's process never exited).
    const native = await ormPool(orm.em).catch(() => undefined);
    if (native) openWhole(native, poolMax);
  }
  return orm;
}

/** How long a shutdown waits for a pool's connections to be given back before it closes without them. */
export const POOL_CLOSE_TIMEOUT_MS = 5000;

/**
 * A pool ends only once every connection checked out is given back, so one held forever (the
 * worker's ORM pool after a PostgreSQL restart, in one CI run: see ./failed-begin.ts), or by work
 * still in flight, would keep the process from exiting until its orchestrator kills it. Past the
 * timeout this says what the pool still holds and ends those connections under their holders
 * (whose queries then fail): the process exits, and PostgreSQL rolls back whatever they had begun.
 */
export async function endPoolWithin(name: string, ending: Promise<unknown>, pool: pg.Pool | undefined, log: Logger, timeoutMs = POOL_CLOSE_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    if ((await Promise.race([ending, gaveUp])) === 'timeout') {
      log.warn(
        { pool: name, timeoutMs, total: pool?.totalCount, idle: pool?.idleCount, waiting: pool?.waitingCount },
        'database pool not closed in time: connections still checked out; ending them',
      );
      for (const client of (pool && clientsOf.get(pool)) ?? []) void client.end().catch(() => undefined);
    }
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Closes the ORM, its pool within POOL_CLOSE_TIMEOUT_MS (endPoolWithin). For good: the ORM opens a
 * new pool for any query after its close, and work still in flight (a handler past the server's
 * drain, a job past the worker's) would then hold connections, kept open as the pool's minimum, that
 * keep the process from ever exiting. Such a query fails instead.
 */
export async function closeOrm(orm: MikroORM, log: Logger, timeoutMs = POOL_CLOSE_TIMEOUT_MS): Promise<void> {
  orm.config.set('driverOptions', () => {
    throw new Error('the database pool is closed: this process is shutting down');
  });
  const pool = await ormPool(orm.em).catch(() => undefined);
  await endPoolWithin('orm', orm.close(true), pool, log, timeoutMs);
}
