// `npm start`: the whole stack on this machine with the embedded (local bubblewrap) runtime:
// PostgreSQL and Redis under .paddock/dev (unless DATABASE_URL / REDIS_URL are given), migrations,
// one API and one worker. Ctrl-C stops everything it started, the sandboxes included: untrusted
// code must not run on with no control plane left to reap it.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { reachableDir, startServices } from './services.ts';
import { bindListener, type HandedListener } from './listener.ts';
import { openOrm } from '../shared/db/orm.ts';
import { migrateDatabase } from '../migrations/migrate.ts';
import { parseConfig } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { createRuntime } from '../shared/runtime/index.ts';
import { markDestroyed } from '../shared/sandboxes/transitions.ts';
import { removePooled } from '../shared/repositories/warm-pool.ts';
import { ReadViews } from '../shared/cache/read-views.ts';
import { createRequestRedis } from '../shared/redis.ts';
import type { RecordedEvent } from '../shared/events/types.ts';

const root = resolve(import.meta.dirname, '..');
const stackDir = resolve(root, '.paddock/dev');
const say = (line: string) => process.stderr.write(`[paddock] ${line}\n`);
// Ctrl-C reaches every process of the terminal's foreground group: in `npm start | tee log`, tee
// is gone before the stack has stopped. Lines that cannot be written are dropped; the stopping
// (the sandboxes, the services) must still happen.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);

/** Secrets made once and kept, so tokens and encrypted secrets survive restarts of the stack. */
function devSecrets(): { jwtSecret: string; secretsKey: string; webhookSecretsKey: string } {
  const file = join(stackDir, 'secrets.json');
  if (existsSync(file)) {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as { jwtSecret: string; secretsKey: string; webhookSecretsKey?: string };
    if (kept.webhookSecretsKey) return { ...kept, webhookSecretsKey: kept.webhookSecretsKey };
    // A file from before webhooks: add their key, keeping the others.
    const updated = { ...kept, webhookSecretsKey: randomBytes(32).toString('hex') };
    writeFileSync(file, JSON.stringify(updated), { mode: 0o600 });
    return updated;
  }
  const secrets = { jwtSecret: randomBytes(32).toString('hex'), secretsKey: randomBytes(32).toString('hex'), webhookSecretsKey: randomBytes(32).toString('hex') };
  mkdirSync(stackDir, { recursive: true });
  writeFileSync(file, JSON.stringify(secrets), { mode: 0o600 });
  return secrets;
}

/**
 * The web's socket, bound here: `PORT` if given, else 8787 (a stable default is friendlier to a
 * saved CLI config) or any free port when another process holds it.
 */
async function webListener(host: string): Promise<HandedListener> {
  const given = process.env.PORT;
  if (given !== undefined && !(/^\d{1,5}$/.test(given) && Number(given) <= 65535)) {
    say(`PORT must be a port number (0 picks any), not ${JSON.stringify(given)}`);
    await services.stop();
    process.exit(1);
  }
  const listener = await bindListener(host, given !== undefined ? [Number(given)] : [8787, 0]);
  if (listener) return listener;
  say(`port ${given} on ${host} is taken: set PORT to a free one (0 picks any)`);
  await services.stop();
  process.exit(1);
}

/** Shows a process's JSON log lines as short human lines; `heard` sees each line's fields. */
function relay(child: ChildProcess, role: string, heard?: (entry: Record<string, unknown>) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    createInterface({ input: stream }).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as { time?: string; msg?: string; level?: number; [k: string]: unknown };
        heard?.(entry);
        const { time, msg, level, pid: _pid, role: _role, name: _name, ...rest } = entry;
        const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : '';
        const tag = (level ?? 30) >= 50 ? 'ERROR ' : (level ?? 30) >= 40 ? 'WARN ' : '';
        process.stderr.write(`${time?.slice(11, 19) ?? ''} ${role.padEnd(6)} ${tag}${msg ?? ''}${extra}\n`);
      } catch {
        process.stderr.write(`${role.padEnd(6)} ${line}\n`);
      }
    });
  }
}

const services = await startServices({ dir: stackDir, database: 'paddock', persistRedis: true, log: say });
const secrets = devSecrets();
const host = process.env.HOST ?? '127.0.0.1';
const listener = await webListener(host);
const port = listener.port;
const env: NodeJS.ProcessEnv = {
  ...process.env,
  PATH: `${resolve(root, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}`,
  NODE_ENV: 'development',
  HOST: host,
  PORT: String(port),
  DATABASE_URL: services.databaseUrl,
  REDIS_URL: services.redisUrl,
  PADDOCK_JWT_SECRET: process.env.PADDOCK_JWT_SECRET ?? secrets.jwtSecret,
  PADDOCK_SECRETS_KEY: process.env.PADDOCK_SECRETS_KEY ?? secrets.secretsKey,
  PADDOCK_WEBHOOK_SECRETS_KEY: process.env.PADDOCK_WEBHOOK_SECRETS_KEY ?? secrets.webhookSecretsKey,
  PADDOCK_DATA_DIR: process.env.PADDOCK_DATA_DIR ?? reachableDir(join(stackDir, 'data')),
  // Another stack (or a test's) on this host may hold the production default, 9091: by default
  // the worker binds any free port and says which on its "worker started" line.
  PADDOCK_WORKER_METRICS_PORT: process.env.PADDOCK_WORKER_METRICS_PORT ?? '0',
};

const applied = await migrateDatabase(services.databaseUrl);
if (applied.length) say(`migrations applied: ${applied.join(', ')}`);

/**
 * Destroys every sandbox this stack's runtime holds (its data folder's: never another stack's, even
 * on a shared database) and records each destroyed (reason user: the stack's owner stopped it), so
 * usage and events stay right. Runs once the web and the worker are gone: nothing creates meanwhile.
 */
async function destroySandboxes(): Promise<void> {
  const config = parseConfig(env, 'worker');
  const runtime = await createRuntime(config, createLogger('silent', 'dev-stack'));
  try {
    const left = await runtime.list();
    if (left.length === 0) return;
    say(`destroying ${left.length} sandbox${left.length === 1 ? '' : 'es'}…`);
    const orm = await openOrm(services.databaseUrl, 2);
    // The next start's web, on the same Redis, serves no view of them as they were.
    const redis = createRequestRedis(services.redisUrl, { enableOfflineQueue: true });
    const views = new ReadViews(redis, config.PADDOCK_REDIS_PREFIX, 0);
    const changed = (accountIds: Iterable<string>) => views.changed(accountIds).catch(() => undefined);
    const staleViews = {
      announce: (events: readonly (RecordedEvent | undefined)[]) => changed(events.flatMap((e) => (e ? [e.accountId] : []))),
      changed,
    };
    try {
      for (const { id } of left) {
        await runtime.destroy(id);
        await markDestroyed(orm.em.fork(), id, 'user', undefined, staleViews);
        // A pooled one has no sandbox row, only its place in the pool.
        await removePooled(orm.em.fork(), [id]);
      }
    } finally {
      await Promise.allSettled([orm.close(true), redis.quit()]);
    }
  } finally {
    await runtime.close();
  }
}

const children: ChildProcess[] = [];
/** The worker's probes' port, once the worker says it has bound it. */
let workerMetricsPort: number | undefined;
let stopping = false;
async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    say('stopping…');
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once('exit', () => done());
            // Ctrl-C in a terminal reaches the children too and they drain on their own; a
            // second signal would make them exit at once, so SIGTERM only the ones still up later.
            setTimeout(() => child.kill('SIGTERM'), 10_000).unref();
          }),
      ),
    );
    // Another `npm start` in this checkout shares the data folder and its sandboxes: the last one out destroys them.
    await services.stop(async () => {
      await destroySandboxes().catch((err: Error) => void say(`could not destroy the sandboxes: ${err.message}`));
    });
    say('stopped');
  }
  process.exit(code);
}

for (const [role, script] of [['web', 'api/main.ts'], ['worker', 'workers/main.ts']] as const) {
  // The web serves the socket bound above, as its descriptor 3.
  const child =
    role === 'web'
      ? spawn(process.execPath, [script], { cwd: root, env: { ...env, PADDOCK_LISTEN_FD: '3' }, stdio: ['ignore', 'pipe', 'pipe', listener.fd] })
      : spawn(process.execPath, [script], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  relay(child, role, (entry) => {
    if (role === 'worker' && entry.msg === 'worker started' && typeof entry.metricsPort === 'number') workerMetricsPort = entry.metricsPort;
  });
  child.on('exit', (code, signal) => {
    if (!stopping) {
      say(`${role} exited (${signal ?? code}); stopping the stack`);
      void stopAll(1);
    }
  });
  children.push(child);
}
listener.close();
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

const baseUrl = `http://127.0.0.1:${port}`;
const up = (url: string) => fetch(url).then((r) => r.ok, () => false);
// "Running" only once both answer: a process that failed to start has stopped the stack instead.
const deadline = Date.now() + 60_000;
while (!stopping && !(workerMetricsPort !== undefined && (await up(`${baseUrl}/readyz`)) && (await up(`http://127.0.0.1:${workerMetricsPort}/healthz`)))) {
  if (Date.now() > deadline) {
    say('the web or the worker did not become ready within 60 s; stopping the stack');
    await stopAll(1);
  }
  await new Promise((r) => setTimeout(r, 100));
}
if (!stopping) {
  process.stdout.write(
    `\nPaddock is running at ${baseUrl}\n\nNext step:\n  paddock signup --url ${baseUrl}\n\nPress Ctrl-C to stop.\n\n`,
  );
}
