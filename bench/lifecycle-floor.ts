// The lifecycle's floor: the hops the design card fixes for a create that waits until running, each
// done once with the same libraries and no work. A request: one Redis GET (the credential), one
// PostgreSQL round trip (the quota's lock and the row, committed), a BullMQ job; the worker takes
// it, makes nothing, marks the row running in one round trip and publishes on a Redis channel,
// which the waiting request hears and answers. The create bench reads the API's overhead over the
// raw runtime against it: what is left is Paddock's own. `ROLE=worker` runs the worker's half, as
// a process of its own as Paddock's is. Run by bench/targets.ts.
import { randomBytes } from 'node:crypto';
import Koa from 'koa';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';

const env = process.env;
const port = Number(env.PORT);
if (!env.DATABASE_URL || !env.REDIS_URL || !port) throw new Error('lifecycle-floor needs DATABASE_URL, REDIS_URL and PORT');

const prefix = `bench-floor-${port}`;
const queueName = 'floor-lifecycle';
const channel = `${prefix}:ring`;
// As BullMQ asks: a connection whose commands wait through a reconnect.
const connection = new Redis(env.REDIS_URL, { maxRetriesPerRequest: null });
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.PADDOCK_DB_POOL_MAX ?? 10) });
// The run's PostgreSQL stops at its end, perhaps before this process does.
pool.on('error', () => undefined);

if (env.ROLE === 'worker') {
  const redis = new Redis(env.REDIS_URL);
  const worker = new Worker(
    queueName,
    async (job) => {
      const id = (job.data as { id: string }).id;
      await pool.query(`update floor_sandboxes set status = 'running' where id = $1 and status = 'pending'`, [id]);
      await redis.publish(channel, id);
    },
    { connection, prefix, concurrency: 20 },
  );
  await worker.waitUntilReady();
  process.stdout.write('floor worker started\n');
  process.on('SIGTERM', () => void worker.close().finally(() => void pool.end().finally(() => process.exit(0))));
} else {
  await pool.query(`create table if not exists floor_accounts (id int primary key)`);
  await pool.query(`insert into floor_accounts values (1) on conflict do nothing`);
  await pool.query(`create table if not exists floor_sandboxes (id text primary key, status text not null)`);
  const KEY = 'bench:floor';
  const redis = new Redis(env.REDIS_URL);
  await redis.set(KEY, JSON.stringify({ keyId: 'key_0123456789abcdefghij', accountId: 'acct_0123456789abcdefghij' }));
  const queue = new Queue(queueName, { connection, prefix });
  const waiting = new Map<string, () => void>();
  const subscriber = new Redis(env.REDIS_URL);
  subscriber.on('message', (_channel: string, id: string) => waiting.get(id)?.());
  await subscriber.subscribe(channel);

  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.method !== 'POST') {
      ctx.body = { ready: true };
      return;
    }
    const cached = await redis.get(KEY);
    if (cached === null) throw new Error('the credential is gone');
    const id = `sbx_${randomBytes(10).toString('hex')}`;
    const running = new Promise<void>((resolve) => waiting.set(id, resolve));
    // The simple query protocol: one round trip for the lock, the row and the commit.
    await pool.query(`begin; select id from floor_accounts where id = 1 for update; insert into floor_sandboxes values ('${id}', 'pending'); commit`);
    await queue.add('create', { id }, { jobId: id, removeOnComplete: true });
    await running;
    waiting.delete(id);
    ctx.status = 201;
    ctx.body = { id, status: 'running' };
  });

  const server = app.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void Promise.allSettled([queue.obliterate({ force: true }).then(() => queue.close()), pool.end()]).finally(() => {
      redis.disconnect();
      subscriber.disconnect();
      process.exit(0);
    });
  });
}
