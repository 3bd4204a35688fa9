// The burst's floor (bench/burst.ts): the least an API can do for an exec with the same libraries
// and pool size as Paddock, so the burst's cost to a neighbour is read against what the machine
// itself allows. Per `POST /v1/sandboxes/{id}/exec`: the body read and parsed; one Redis round
// trip that stands for the key's lookup and takes a place in flight (16 an account, as Paddock's
// default); the refused answered 429 at once; the admitted run one `SELECT 1` and hand their
// command to a runner process (no sandbox), killed at its timeout, answering its output.
// Run as its own process by bench/targets.ts (startBurstFloor).
import Koa from 'koa';
import { Redis } from 'ioredis';
import pg from 'pg';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const env = process.env;
const port = Number(env.PORT);
if (!env.DATABASE_URL || !env.REDIS_URL || !port) throw new Error('burst-floor needs DATABASE_URL, REDIS_URL and PORT');

const PLACES = 16;
const BODY_LIMIT = 1 << 20;
const EXEC_PATH = /^\/v1\/sandboxes\/[^/]+\/exec$/;
const prefix = `bench:burst-floor:${port}`;

const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.PADDOCK_DB_POOL_MAX ?? 10) });
const redis = new Redis(env.REDIS_URL);
await redis.set(`${prefix}:key`, JSON.stringify({ keyId: 'key_0123456789abcdefghij', accountId: 'acct_0123456789abcdefghij' }));
const takePlace = `
local identity = redis.call('GET', KEYS[1])
local held = redis.call('INCR', KEYS[2])
if held > tonumber(ARGV[1]) then redis.call('DECR', KEYS[2]); return {identity, 0} end
return {identity, 1}`;

interface Outcome {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

// Commands run in a runner process of the floor's own (bench/burst-floor-spawner.ts).
const runner = spawn(process.execPath, [new URL('./burst-floor-spawner.ts', import.meta.url).pathname], { stdio: ['pipe', 'pipe', 'inherit'] });
const waiting = new Map<number, (outcome: Outcome) => void>();
let lastId = 0;
let stopping = false;
// Without its runner no command would ever be answered: the floor stops, so the bench fails
// instead of waiting forever.
runner.once('exit', () => {
  if (stopping) return;
  process.stderr.write('burst-floor: its runner exited\n');
  process.exit(1);
});
createInterface({ input: runner.stdout }).on('line', (line) => {
  const { id, ...outcome } = JSON.parse(line) as Outcome & { id: number };
  waiting.get(id)?.(outcome);
  waiting.delete(id);
});

function run(command: string | string[], timeoutSeconds: number): Promise<Outcome> {
  const id = ++lastId;
  return new Promise((done) => {
    waiting.set(id, done);
    runner.stdin.write(`${JSON.stringify({ id, command, timeoutSeconds })}\n`);
  });
}

async function readBody(req: Koa.Context['req']): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_LIMIT) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const app = new Koa();
app.use(async (ctx) => {
  if (ctx.method === 'GET' && ctx.path === '/') {
    ctx.body = { ready: true };
    return;
  }
  const token = /^Bearer (\S+)$/.exec(ctx.get('authorization'))?.[1];
  if (ctx.method !== 'POST' || !EXEC_PATH.test(ctx.path) || !token) {
    ctx.status = 404;
    return;
  }
  const text = await readBody(ctx.req);
  let body: { command?: string | string[]; timeoutSeconds?: number };
  try {
    body = JSON.parse(text ?? '') as typeof body;
  } catch {
    ctx.status = 400;
    return;
  }
  const held = `${prefix}:held:${token}`;
  const [identity, admitted] = (await redis.eval(takePlace, 2, `${prefix}:key`, held, PLACES)) as [string | null, number];
  if (identity === null) {
    ctx.status = 401;
    return;
  }
  if (!admitted) {
    ctx.status = 429;
    ctx.set('Retry-After', '1');
    ctx.body = { type: 'about:blank', title: 'Too many commands in flight', status: 429, code: 'too_many_in_flight' };
    return;
  }
  try {
    await pool.query('SELECT 1');
    if (!body.command || body.command.length === 0) {
      ctx.status = 400;
      return;
    }
    ctx.body = await run(body.command, body.timeoutSeconds ?? 60);
  } finally {
    await redis.decr(held);
  }
});

const server = app.listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  stopping = true;
  server.close();
  server.closeAllConnections();
  runner.kill();
  void pool.end().finally(() => {
    redis.disconnect();
    process.exit(0);
  });
});
