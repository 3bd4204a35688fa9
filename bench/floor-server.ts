// The floor: the least any API answering from Redis and PostgreSQL can do per request, with the
// same libraries and pool size as Paddock. Paddock's figures are read against it, so the bench
// measures our own overhead rather than the machine. Run as its own process by bench/targets.ts.
import Koa from 'koa';
import { Redis } from 'ioredis';
import pg from 'pg';

const env = process.env;
const port = Number(env.PORT);
if (!env.DATABASE_URL || !env.REDIS_URL || !port) throw new Error('floor-server needs DATABASE_URL, REDIS_URL and PORT');

const KEY = 'bench:floor';
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.PADDOCK_DB_POOL_MAX ?? 10) });
const redis = new Redis(env.REDIS_URL);
// A value the size of a cached API-key identity, so the GET moves what Paddock's does.
await redis.set(KEY, JSON.stringify({ keyId: 'key_0123456789abcdefghij', accountId: 'acct_0123456789abcdefghij' }));

const app = new Koa();
app.use(async (ctx) => {
  const cached = await redis.get(KEY);
  const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
  ctx.body = { cached: cached !== null, one: rows[0]?.one };
});

const server = app.listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end().finally(() => {
    redis.disconnect();
    process.exit(0);
  });
});
