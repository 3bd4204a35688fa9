// Brings up what Paddock needs on a development or CI machine: the Debian packages, and a
// PostgreSQL and a Redis of its own under .paddock/ on free ports (unless DATABASE_URL and
// REDIS_URL name running ones). Used by `npm start`, `npm test` and `npm run bench`.
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

export interface Services {
  databaseUrl: string;
  redisUrl: string;
  /** Stops what this call started; leaves alone services it only found or was given. */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  /** Folder for this stack's data, e.g. `.paddock/dev`. */
  dir: string;
  /** Database to create (if missing) in the PostgreSQL found or started. */
  database: string;
  /** Drop and recreate the database first (tests want a clean one each run). */
  fresh?: boolean;
  /** Keep Redis's data across restarts (the dev stack) or not (tests). */
  persistRedis?: boolean;
  log?: (line: string) => void;
}

const DEBIAN_PACKAGES = { postgres: 'postgresql', 'redis-server': 'redis-server', bwrap: 'bubblewrap' } as const;

/** Installs the Debian packages that are missing (needs root or password-less sudo). */
export async function ensureDebianPackages(log: (line: string) => void, need = Object.keys(DEBIAN_PACKAGES)): Promise<void> {
  const missing = need
    .filter((bin) => (bin === 'postgres' ? !postgresBinDir() : !onPath(bin)))
    .map((bin) => DEBIAN_PACKAGES[bin as keyof typeof DEBIAN_PACKAGES]);
  if (missing.length === 0) return;
  log(`installing Debian packages: ${missing.join(' ')}`);
  const sudo = isRoot ? [] : ['sudo', '-n'];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...missing]]) {
    const cmd = [...sudo, ...args];
    const result = spawnSync(cmd[0]!, cmd.slice(1), { stdio: ['ignore', 'ignore', 'inherit'], env });
    if (result.status !== 0) {
      throw new Error(`"${cmd.join(' ')}" failed; install ${missing.join(', ')} by hand or run as root`);
    }
  }
}

function onPath(bin: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' }).status === 0;
}

export function postgresBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(base, versions[0], 'bin') : undefined;
}

/**
 * A port nothing listens on, below the kernel's range for outgoing connections (32768 and up on
 * Linux): a port from that range can be taken by any client's connection between this check and
 * the listen, or while a server the fault tests stopped is down.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  throw new Error('no free port between 20000 and 32000');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree(true)));
  });
}

export async function startServices(options: ServiceOptions): Promise<Services> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const stops: (() => Promise<void>)[] = [];
  const given = { db: process.env.DATABASE_URL, redis: process.env.REDIS_URL };
  await ensureDebianPackages(log, [...(given.db ? [] : ['postgres']), ...(given.redis ? [] : ['redis-server']), 'bwrap']);
  try {
    let serverUrl: string;
    if (given.db) {
      serverUrl = given.db;
    } else {
      const postgres = await startPostgres(options.dir, log);
      if (postgres.stop) stops.push(postgres.stop);
      serverUrl = postgres.url;
    }
    const databaseUrl = given.db ?? (await ensureDatabase(serverUrl, options.database, options.fresh ?? false));
    let redisUrl: string;
    if (given.redis) {
      redisUrl = given.redis;
    } else {
      const redis = await startRedis(options.dir, options.persistRedis ?? false, log);
      if (redis.stop) stops.push(redis.stop);
      redisUrl = redis.url;
    }
    return {
      databaseUrl,
      redisUrl,
      async stop() {
        for (const stop of stops.reverse()) await stop().catch((err: unknown) => log(`stop failed: ${String(err)}`));
      },
    };
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}

/** Runs a command as the postgres user when we are root (PostgreSQL refuses to run as root). */
export function asPostgres(cmd: string, args: string[]): [string, string[]] {
  return isRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

/**
 * `preferred`, when users other than root can reach it: the postgres user (who owns the cluster)
 * and the sandboxes' unprivileged uids (who open their workspaces by path). A checkout under /root
 * or in a mktemp folder (0700) is not reachable, so there the folder lives under /var/tmp instead,
 * named after `preferred` so that the next run finds it again.
 */
export function reachableDir(preferred: string): string {
  mkdirSync(dirname(preferred), { recursive: true });
  if (searchableByOthers(dirname(preferred))) return preferred;
  const hash = createHash('sha256').update(preferred).digest('hex').slice(0, 12);
  const base = join('/var/tmp', `paddock-${hash}`);
  mkdirSync(base, { recursive: true });
  chmodSync(base, 0o755); // mkdir's mode yields to the umask
  return join(base, basename(preferred));
}

function searchableByOthers(dir: string): boolean {
  for (let d = dir; ; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return false;
    if (d === dirname(d)) return true;
  }
}

async function startPostgres(stackDir: string, log: (line: string) => void) {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL is not installed');
  const dataDir = reachableDir(resolve(stackDir, 'postgres'));
  const socketDir = dataDir; // a socket inside the data folder keeps clusters apart
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (isRoot) {
    const { uid, gid } = postgresIds();
    chownSync(dataDir, uid, gid);
  }
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    log(`initialising PostgreSQL in ${dataDir}`);
    const [cmd, args] = asPostgres(join(bin, 'initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync']);
    await run(cmd, args);
  }
  const running = runningPostgresPort(dataDir, bin);
  if (running) {
    log(`PostgreSQL already running on port ${running}`);
    return { url: `postgres://postgres@127.0.0.1:${running}/postgres`, stop: undefined };
  }
  const port = await freePort();
  const logFile = join(dataDir, 'server.log');
  const settings = `-p ${port} -k ${socketDir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const [cmd, args] = asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-o', settings, '-w', '-t', '60', 'start']);
  await run(cmd, args);
  log(`PostgreSQL started on 127.0.0.1:${port}`);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: async () => {
      const [c, a] = asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
      await run(c, a);
    },
  };
}

export function postgresIds(): { uid: number; gid: number } {
  const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout.toString().trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres']).stdout.toString().trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error('the postgres user does not exist');
  return { uid, gid };
}

function runningPostgresPort(dataDir: string, bin: string): number | undefined {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const [cmd, args] = asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, 'status']);
  if (spawnSync(cmd, args, { stdio: 'ignore' }).status !== 0) return undefined;
  const port = Number(readFileSync(pidFile, 'utf8').split('\n')[3]);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

/** The database `database` on the server at `serverUrl` (dropped first when `fresh`), created if missing; its URL. */
export async function ensureDatabase(serverUrl: string, database: string, fresh: boolean): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(database)) throw new Error(`bad database name ${database}`);
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    if (fresh) await client.query(`drop database if exists ${database} with (force)`);
    const exists = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (exists.rowCount === 0) await client.query(`create database ${database}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function startRedis(stackDir: string, persist: boolean, log: (line: string) => void) {
  const dir = resolve(stackDir, 'redis');
  mkdirSync(dir, { recursive: true });
  const portFile = join(dir, 'port');
  if (existsSync(portFile)) {
    const port = Number(readFileSync(portFile, 'utf8'));
    if (await redisAnswers(port)) {
      log(`Redis already running on port ${port}`);
      return { url: `redis://127.0.0.1:${port}`, stop: undefined };
    }
  }
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'yes'];
  args.push('--pidfile', join(dir, 'redis.pid'), '--logfile', join(dir, 'redis.log'));
  args.push(...(persist ? ['--save', '60 1', '--appendonly', 'no'] : ['--save', '', '--appendonly', 'no']));
  await run('redis-server', args);
  for (let i = 0; i < 100 && !(await redisAnswers(port)); i++) await new Promise((r) => setTimeout(r, 50));
  if (!(await redisAnswers(port))) throw new Error(`Redis did not start; see ${join(dir, 'redis.log')}`);
  writeFileSync(portFile, String(port));
  log(`Redis started on 127.0.0.1:${port}`);
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      await run('redis-cli', ['-p', String(port), 'shutdown', persist ? 'save' : 'nosave']).catch(() => undefined);
    },
  };
}

export async function redisAnswers(port: number): Promise<boolean> {
  try {
    const { stdout } = await run('redis-cli', ['-p', String(port), 'ping'], { timeout: 2000 });
    return stdout.trim() === 'PONG';
  } catch {
    return false;
  }
}
