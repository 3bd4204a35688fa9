import { after } from 'node:test';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { asPostgres, freePort, postgresBinDir, postgresIds, redisAnswers } from '../../scripts/services.ts';
import { migrateDatabase } from '../../migrations/migrate.ts';

/**
 * A shell that runs `cleanup` once this process is gone, however it went: the test runner ends a
 * file whose start-up threw with SIGKILL, before any after() hook or exit handler runs, and a
 * PostgreSQL or Redis it had started would run on for the rest of the suite. Killed by the
 * file's own cleanup when that runs.
 */
function cleanupWhenGone(cleanup: string[]): ChildProcess {
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; exec "$@"`;
  const watchdog = spawn('sh', ['-c', script, 'cleanup-when-gone', ...cleanup], { stdio: 'ignore', detached: true });
  watchdog.unref();
  return watchdog;
}

// PostgreSQL and Redis of one test file's own, for fault tests that stop and start them: the
// shared services the test runner started stay untouched for the files running in parallel.
// Each keeps its port across stop() and start(), as a restarted server would.

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

export interface PrivateService {
  url: string;
  port: number;
  /** Stops the server; resolves once its port refuses connections. */
  stop(): Promise<void>;
  /** Starts it again on the same port; resolves once it answers. */
  start(): Promise<void>;
  running(): boolean;
}

/**
 * A Redis without persistence: stop() shuts it down without saving, so start() brings back an
 * empty Redis, as a crashed or replaced one comes back.
 */
export async function startPrivateRedis(): Promise<PrivateService> {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-redis-'));
  const port = await freePort();
  let child: (ChildProcess & { exitedP: Promise<void> }) | undefined;

  const start = async () => {
    if (child) return;
    const proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--logfile', join(dir, 'redis.log')],
      { stdio: 'ignore' },
    );
    const exitedP = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    const watchdog = cleanupWhenGone(['kill', '-9', String(proc.pid)]);
    child = Object.assign(proc, { exitedP });
    void exitedP.then(() => {
      watchdog.kill();
      if (child === proc) child = undefined;
    });
    await waitForPort(port, true, 20_000, `Redis on ${port} (log in ${dir})`);
    for (let i = 0; i < 100; i++) {
      if (await redisAnswers(port)) return;
      await sleep(50);
    }
    throw new Error(`Redis on ${port} does not answer PING`);
  };

  const stop = async () => {
    const proc = child;
    if (!proc) return;
    // SHUTDOWN NOSAVE: nothing is written, so the next start is empty whatever the config.
    await run('redis-cli', ['-p', String(port), 'shutdown', 'nosave'], { timeout: 5000 }).catch(() => proc.kill('SIGKILL'));
    await Promise.race([proc.exitedP, sleep(10_000).then(() => proc.kill('SIGKILL'))]);
    await proc.exitedP;
    await waitForPort(port, false, 10_000, `Redis on ${port} to stop`);
  };

  await start();
  after(async () => {
    await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return { url: `redis://127.0.0.1:${port}`, port, start, stop, running: () => child !== undefined };
}

/**
 * A PostgreSQL cluster of its own (initdb, then pg_ctl), as the postgres user when root, in a
 * folder under /var/tmp that user can reach, migrated to the current schema.
 */
export async function startPrivatePostgres(): Promise<PrivateService> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL is not installed');
  const base = mkdtempSync(join('/var/tmp', 'paddock-pg-'));
  chmodSync(base, 0o755);
  const dataDir = join(base, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  if (isRoot) {
    const { uid, gid } = postgresIds();
    chownSync(base, uid, gid);
    chownSync(dataDir, uid, gid);
  }
  await run(...asPostgres(join(bin, 'initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync']));
  const port = await freePort();
  const settings =
    `-p ${port} -k ${base} -c listen_addresses=127.0.0.1 -c max_connections=200 ` +
    '-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=16MB';
  let up = false;

  const start = async () => {
    if (up) return;
    await run(...asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', join(base, 'server.log'), '-o', settings, '-w', '-t', '60', 'start']));
    up = true;
  };
  const stop = async () => {
    if (!up) return;
    // Fast: open sessions are ended at once (57P01), as in a failover or a restart.
    await run(...asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']));
    up = false;
    await waitForPort(port, false, 10_000, `PostgreSQL on ${port} to stop`);
  };

  const [ctl, ctlArgs] = asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
  const watchdog = cleanupWhenGone(['sh', '-c', '"$@"; rm -rf "$0"', base, ctl, ...ctlArgs]);
  await start();
  after(async () => {
    watchdog.kill();
    await run(ctl, ctlArgs).catch(() => undefined);
    rmSync(base, { recursive: true, force: true });
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  await migrateDatabase(url);
  return { url, port, start, stop, running: () => up };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function waitForPort(port: number, open: boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await portOpen(port)) === open) return;
    await sleep(25);
  }
  throw new Error(`timed out waiting for ${what}`);
}
