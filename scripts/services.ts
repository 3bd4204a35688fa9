// Brings up what Paddock needs on a development or CI machine: the Debian packages, and a
// PostgreSQL and a Redis of its own under .paddock/ on free ports (unless DATABASE_URL and
// REDIS_URL name running ones), each wanting a password made for the stack, so that nothing else
// on the host (a sandbox with network included) gets in by reaching the port. Used by
// `npm start`, `npm test` and `npm run bench`.
import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { withLock } from '../shared/runtime/local/lock.ts';
import { isRunning, readStat } from '../shared/runtime/local/processes.ts';

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

export interface Services {
  databaseUrl: string;
  redisUrl: string;
  /**
   * This process is done with the stack. The last of its users to stop (another `npm start` in
   * the same checkout may have found these services) runs `lastOut`, then stops the stack's
   * PostgreSQL and Redis; services given by DATABASE_URL and REDIS_URL are always left alone.
   */
  stop(lastOut?: () => Promise<void>): Promise<void>;
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

const DEBIAN_PACKAGES = {
  postgres: 'postgresql',
  'redis-server': 'redis-server',
  bwrap: 'bubblewrap',
  // Each local sandbox's own disk (PADDOCK_LOCAL_DISK_MB) is formatted ext4, attached to a loop
  // device and mounted in the sandbox's own mount namespace, entered as its user.
  'mkfs.ext4': 'e2fsprogs',
  losetup: 'mount',
  unshare: 'util-linux',
  setpriv: 'util-linux',
  // Sandboxes with network (PADDOCK_LOCAL_NETWORK): slirp4netns links them out, nft filters, and
  // the network test makes its test host with ip.
  slirp4netns: 'slirp4netns',
  nft: 'nftables',
  ip: 'iproute2',
  // The egress's certificate authority and its certificates for brokered hosts (egress-ca.ts);
  // the network tests' programs in sandboxes speak HTTP(S) with curl.
  openssl: 'openssl',
  curl: 'curl',
  // The local runtime's terminals: socat opens the pseudo-terminal inside the sandbox.
  socat: 'socat',
  // The CLI's terminal tests drive it in a real terminal.
  tmux: 'tmux',
  // The local runtime builds each sandbox's agent (its init, which starts commands) from C.
  cc: 'gcc libc6-dev',
  // Snapshots are compressed in the sandbox by its zstd (the host's userland on the local runtime);
  // without it Paddock compresses them itself, slower.
  zstd: 'zstd',
  // The browser test of previews drives a headless Chromium (test/previews/browser.test.ts).
  chromium: 'chromium',
  // The Python SDK's test builds its wheel (hatchling), installs it into a venv that sees the
  // system's packages, and runs its pytest suite: these are Python modules, checked by import.
  'python3:httpx': 'python3-httpx',
  'python3:pytest': 'python3-pytest',
  'python3:ensurepip': 'python3-venv',
  'python3:pip': 'python3-pip',
  'python3:hatchling': 'python3-hatchling',
  // The brokered-egress test runs the clients agents use in a sandbox (its userland is the host's).
  git: 'git',
  npm: 'npm',
} as const;

/** The Debian Python those packages are for (a python3 earlier on the PATH, pyenv's say, does not see them). */
export const SYSTEM_PYTHON = '/usr/bin/python3';

/** What the previews' browser test needs (test/previews/browser.test.ts). */
export const BROWSER_PACKAGES = ['chromium'];

/** What the Python SDK's test needs (test/sdk-python/). */
export const PYTHON_SDK_PACKAGES = ['python3:httpx', 'python3:pytest', 'python3:ensurepip', 'python3:pip', 'python3:hatchling'];

/** The clients the brokered-egress test runs in a sandbox (test/secrets/brokered-egress.test.ts). */
export const BROKERED_CLIENT_PACKAGES = ['python3:httpx', 'python3:pip', 'git', 'npm'];

/** Installs the Debian packages that are missing (needs root or password-less sudo). */
export async function ensureDebianPackages(log: (line: string) => void, need = Object.keys(DEBIAN_PACKAGES)): Promise<void> {
  const missing = need
    .filter((bin) => (bin === 'postgres' ? !postgresBinDir() : bin.startsWith('python3:') ? !importable(bin.slice('python3:'.length)) : !onPath(bin)))
    .flatMap((bin) => DEBIAN_PACKAGES[bin as keyof typeof DEBIAN_PACKAGES].split(' '));
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

function importable(module: string): boolean {
  return spawnSync(SYSTEM_PYTHON, ['-c', `import ${module}`], { stdio: 'ignore' }).status === 0;
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

/** Whether a listener on 127.0.0.1:`port` could start now (another may take it a moment later). */
export function canListen(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree(true)));
  });
}

/** How long a start waits for another start of the same stack (initdb, pg_ctl's own 60 s) to finish. */
const SERVICES_START_TIMEOUT_MS = 180_000;

export async function startServices(options: ServiceOptions): Promise<Services> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const given = { db: process.env.DATABASE_URL, redis: process.env.REDIS_URL };
  await ensureDebianPackages(log, [
    ...(given.db ? [] : ['postgres']),
    ...(given.redis ? [] : ['redis-server']),
    'bwrap',
    'socat',
    'slirp4netns',
    'nft',
    'ip',
    'openssl',
    'curl',
    'cc',
    'zstd',
  ]);
  // Two starts of one stack at once (two `npm start` in one checkout) would both make its
  // passwords and both run initdb on its empty folder, and one would crash: the second waits, then
  // finds what the first started.
  const lock = `paddock-services-${createHash('sha256').update(resolve(options.dir)).digest('hex').slice(0, 32)}`;
  const users = new StackUsers(resolve(options.dir, 'users'));
  const found = await withLock(lock, Date.now() + SERVICES_START_TIMEOUT_MS, async () => {
    const services = await startOrFind(options, given, log);
    users.join();
    return services;
  });
  return {
    databaseUrl: found.databaseUrl,
    redisUrl: found.redisUrl,
    // Under the start's lock, so that a start meanwhile waits and then starts afresh.
    stop: (lastOut) =>
      withLock(lock, Date.now() + SERVICES_START_TIMEOUT_MS, async () => {
        const others = users.leave();
        if (others.length > 0) {
          log(`leaving the stack's services running: its process ${others.join(', ')} still uses them`);
          return;
        }
        await lastOut?.();
        await found.stop();
      }),
  };
}

/**
 * The processes that use one stack's services, each a file named for its pid that holds the
 * process's start time, so that a pid reused after a crash does not count as a user.
 */
class StackUsers {
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  join(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(this.dir, String(process.pid)), readStat(process.pid)?.startTime ?? '', { mode: 0o600 });
  }

  /** Leaves, and answers the pids of the users still running (forgetting those that are gone). */
  leave(): number[] {
    rmSync(join(this.dir, String(process.pid)), { force: true });
    const others: number[] = [];
    for (const name of existsSync(this.dir) ? readdirSync(this.dir) : []) {
      const pid = Number(name);
      const startTime = readFileSync(join(this.dir, name), 'utf8');
      if (Number.isInteger(pid) && startTime !== '' && isRunning(pid, startTime)) others.push(pid);
      else rmSync(join(this.dir, name), { force: true });
    }
    return others;
  }
}

/** The stack's services, started or found; `stop` stops those of this stack's folder, whoever started them. */
async function startOrFind(
  options: ServiceOptions,
  given: { db?: string; redis?: string },
  log: (line: string) => void,
): Promise<{ databaseUrl: string; redisUrl: string; stop(): Promise<void> }> {
  const stops: (() => Promise<void>)[] = [];
  // A start that fails stops what it started itself: what it found, someone else may be using.
  const startedHere: (() => Promise<void>)[] = [];
  try {
    let databaseUrl: string;
    if (given.db) {
      databaseUrl = given.db;
    } else {
      const postgres = await startPostgres(options.dir, stackPassword(options.dir, 'postgres'), log);
      stops.push(postgres.stop);
      if (postgres.started) startedHere.push(postgres.stop);
      await ensureOwnedDatabase(postgres.admin, options.database, options.fresh ?? false);
      databaseUrl = withDatabase(postgres.url, options.database);
    }
    let redisUrl: string;
    if (given.redis) {
      redisUrl = given.redis;
    } else {
      const redis = await startRedis(options.dir, stackPassword(options.dir, 'redis'), options.persistRedis ?? false, log);
      stops.push(redis.stop);
      if (redis.started) startedHere.push(redis.stop);
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
    for (const stop of startedHere.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}

/**
 * The stack's password for `service`, made once and kept in the stack's folder (0600, owned by
 * whoever runs the stack): never on a command line, so `ps` shows it to no one.
 */
export function stackPassword(stackDir: string, service: 'postgres' | 'redis'): string {
  const dir = resolve(stackDir, 'credentials');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const file = join(dir, service);
  if (existsSync(file)) {
    const kept = readFileSync(file, 'utf8').trim();
    // Hex only, so that it needs no quoting in SQL, a Redis config file or a URL.
    if (/^[0-9a-f]{32,}$/.test(kept)) return kept;
  }
  const password = randomBytes(24).toString('hex');
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return password;
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

/** The role the stack's URL names: no superuser, it owns the databases it is given, and creates more. */
const APP_ROLE = 'paddock';

/**
 * Over TCP only the app role gets in, with its password (scram-sha-256); the superuser is refused
 * there whatever it sends. Only the cluster's own socket, in its 0700 data folder that only the
 * postgres user (and root) can reach, is trusted. Rewritten at each start, so a cluster made
 * before passwords were set gets them too.
 */
const PG_HBA = [
  '# Written by scripts/services.ts at each start.',
  'local all all trust',
  'host all postgres 127.0.0.1/32 reject',
  'host all postgres ::1/128 reject',
  'host all all 127.0.0.1/32 scram-sha-256',
  'host all all ::1/128 scram-sha-256',
  '',
].join('\n');

function writeHba(dataDir: string): boolean {
  const file = join(dataDir, 'pg_hba.conf');
  if (existsSync(file) && readFileSync(file, 'utf8') === PG_HBA) return false;
  writeFileSync(file, PG_HBA, { mode: 0o600 });
  if (isRoot) {
    const { uid, gid } = postgresIds();
    chownSync(file, uid, gid);
  }
  return true;
}

/** Where the superuser connects: the cluster's socket. */
interface PostgresAdmin {
  host: string;
  port: number;
}

async function asSuperuser<T>(admin: PostgresAdmin, database: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ host: admin.host, port: admin.port, user: 'postgres', database });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The app role, with the stack's password, set through the socket: not in any argv or log. */
async function ensureAppRole(admin: PostgresAdmin, password: string): Promise<void> {
  await asSuperuser(admin, 'postgres', async (client) => {
    const exists = await client.query('select 1 from pg_roles where rolname = $1', [APP_ROLE]);
    // CREATE and ALTER ROLE take no parameters; the password is hex (stackPassword), so this literal is safe.
    const verb = exists.rowCount === 0 ? 'create' : 'alter';
    await client.query(`${verb} role ${APP_ROLE} login nosuperuser createdb nocreaterole password '${password}'`);
    // A cluster of before had the stack use the superuser, with no password: it has none now either.
    await client.query('alter role postgres password null');
  });
}

/**
 * The database `database`, owned by the app role (dropped first when `fresh`), created if
 * missing. One made by the superuser before the app role existed is handed over, with what is in
 * its public schema.
 */
async function ensureOwnedDatabase(admin: PostgresAdmin, database: string, fresh: boolean): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(database)) throw new Error(`bad database name ${database}`);
  const owner = await asSuperuser(admin, 'postgres', async (client) => {
    if (fresh) await client.query(`drop database if exists ${database} with (force)`);
    const found = await client.query<{ owner: string }>(
      'select pg_get_userbyid(datdba) as owner from pg_database where datname = $1',
      [database],
    );
    if (found.rowCount === 0) {
      await client.query(`create database ${database} owner ${APP_ROLE}`);
      return APP_ROLE;
    }
    return found.rows[0]!.owner;
  });
  if (owner === APP_ROLE) return;
  await asSuperuser(admin, 'postgres', (client) => client.query(`alter database ${database} owner to ${APP_ROLE}`));
  await asSuperuser(admin, database, async (client) => {
    await client.query(`alter schema public owner to ${APP_ROLE}`);
    await client.query(`
      do $$ declare r record; begin
        for r in select c.relname, c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace
                 where n.nspname = 'public' and c.relkind in ('r', 'p', 'v', 'm', 'S') and pg_get_userbyid(c.relowner) <> '${APP_ROLE}'
                   and not (c.relkind = 'S' and exists (select 1 from pg_depend d where d.objid = c.oid and d.deptype in ('a', 'i')))
        loop
          execute format('alter %s public.%I owner to ${APP_ROLE}',
            case r.relkind when 'v' then 'view' when 'm' then 'materialized view' when 'S' then 'sequence' else 'table' end, r.relname);
        end loop;
        for r in select t.typname from pg_type t join pg_namespace n on n.oid = t.typnamespace
                 where n.nspname = 'public' and t.typtype in ('e', 'd') and pg_get_userbyid(t.typowner) <> '${APP_ROLE}'
        loop
          execute format('alter type public.%I owner to ${APP_ROLE}', r.typname);
        end loop;
      end $$`);
  });
}

async function startPostgres(stackDir: string, password: string, log: (line: string) => void) {
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
  const hbaChanged = writeHba(dataDir);
  const url = (port: number): string => `postgres://${APP_ROLE}:${password}@127.0.0.1:${port}/postgres`;
  const running = runningPostgresPort(dataDir, bin);
  if (running) {
    log(`PostgreSQL already running on port ${running}`);
    if (hbaChanged) {
      const [cmd, args] = asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, 'reload']);
      await run(cmd, args);
    }
    const admin = { host: socketDir, port: running };
    await ensureAppRole(admin, password);
    return { url: url(running), admin, started: false, stop: () => stopPostgres(bin, dataDir) };
  }
  const port = await freePort();
  const logFile = join(dataDir, 'server.log');
  const settings = `-p ${port} -k ${socketDir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const [cmd, args] = asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-o', settings, '-w', '-t', '60', 'start']);
  await run(cmd, args);
  const admin = { host: socketDir, port };
  await ensureAppRole(admin, password);
  log(`PostgreSQL started on 127.0.0.1:${port}`);
  return {
    url: url(port),
    admin,
    started: true,
    stop: () => stopPostgres(bin, dataDir),
  };
}

async function stopPostgres(bin: string, dataDir: string): Promise<void> {
  const [cmd, args] = asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
  await run(cmd, args);
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
  return withDatabase(serverUrl, database);
}

function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function startRedis(stackDir: string, password: string, persist: boolean, log: (line: string) => void) {
  const dir = resolve(stackDir, 'redis');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const url = (port: number): string => `redis://:${password}@127.0.0.1:${port}`;
  const portFile = join(dir, 'port');
  if (existsSync(portFile)) {
    const port = Number(readFileSync(portFile, 'utf8'));
    // One from before the stack had passwords answers without one: replace it.
    if (await redisAnswers(port)) {
      await run('redis-cli', ['-p', String(port), 'shutdown', persist ? 'save' : 'nosave']).catch(() => undefined);
    } else if (await redisAnswers(port, password)) {
      log(`Redis already running on port ${port}`);
      return { url: url(port), started: false, stop: () => stopRedis(port, password, persist) };
    }
  }
  const port = await freePort();
  // The password goes in the config file (0600), never on redis-server's command line.
  const config = join(dir, 'redis.conf');
  const lines = [
    `port ${port}`,
    'bind 127.0.0.1',
    `dir "${dir}"`,
    'daemonize yes',
    `pidfile "${join(dir, 'redis.pid')}"`,
    `logfile "${join(dir, 'redis.log')}"`,
    `save ${persist ? '"60 1"' : '""'}`,
    'appendonly no',
    `requirepass ${password}`,
    '',
  ];
  writeFileSync(config, lines.join('\n'), { mode: 0o600 });
  chmodSync(config, 0o600);
  await run('redis-server', [config]);
  for (let i = 0; i < 100 && !(await redisAnswers(port, password)); i++) await new Promise((r) => setTimeout(r, 50));
  if (!(await redisAnswers(port, password))) throw new Error(`Redis did not start; see ${join(dir, 'redis.log')}`);
  writeFileSync(portFile, String(port));
  log(`Redis started on 127.0.0.1:${port}`);
  return { url: url(port), started: true, stop: () => stopRedis(port, password, persist) };
}

async function stopRedis(port: number, password: string, persist: boolean): Promise<void> {
  await run('redis-cli', ['-p', String(port), 'shutdown', persist ? 'save' : 'nosave'], { env: redisCliEnv(password) }).catch(() => undefined);
}

/** redis-cli's environment with the password (REDISCLI_AUTH), which would be visible in its argv. */
export function redisCliEnv(password: string | undefined): NodeJS.ProcessEnv {
  return password === undefined ? process.env : { ...process.env, REDISCLI_AUTH: password };
}

export async function redisAnswers(port: number, password?: string): Promise<boolean> {
  try {
    const { stdout } = await run('redis-cli', ['-p', String(port), 'ping'], { timeout: 2000, env: redisCliEnv(password) });
    return stdout.trim() === 'PONG';
  } catch {
    return false;
  }
}
