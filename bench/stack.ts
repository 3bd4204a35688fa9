import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import { parseConfig } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { localRuntimeFrom } from '../shared/runtime/index.ts';
import type { SandboxRuntime } from '../shared/runtime/types.ts';
import { freePort } from '../scripts/services.ts';
import { logFile, startLoggingProcess, type NodeProcess } from './processes.ts';
import { sharedSecrets, startPaddock } from './targets.ts';
import type { BenchContext } from './types.ts';

// Paddock as a deployment runs it with the `local` runtime: `web` and `worker` processes (one of
// each unless asked for more), sharing PostgreSQL, Redis (under a prefix of their own) and a
// sandbox data directory.

export interface Stack {
  /** The first web's base URL. */
  url: string;
  /** Every web's base URL, in order. */
  urls: string[];
  webPid: number;
  workerPid: number;
  webPids: number[];
  workerPids: number[];
  /** Each worker's metrics server (`/metrics`, `/healthz`). */
  workerMetricsUrls: string[];
  /** PADDOCK_DATA_DIR of every process. */
  dataDir: string;
  /** Its PADDOCK_REDIS_PREFIX, the deployment its warm pool's rows name. */
  deployment: string;
  stop(): Promise<void>;
}

export interface StackShape {
  webs?: number;
  workers?: number;
}

/** Limits high enough that no rate bucket or quota shapes what a benchmark measures. */
export const UNLIMITED: NodeJS.ProcessEnv = {
  PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '10000000',
  PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: '10000000',
  PADDOCK_RATE_AUTH_PER_MIN: '10000000',
  PADDOCK_RATE_ACCOUNT_PER_MIN: '10000000',
  PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10000',
  PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS: '10000000',
  PADDOCK_INFLIGHT_EXEC_PER_SANDBOX: '100000',
  PADDOCK_INFLIGHT_EXEC_PER_ACCOUNT: '100000',
  PADDOCK_INFLIGHT_FILES_PER_SANDBOX: '100000',
  PADDOCK_INFLIGHT_FILES_PER_ACCOUNT: '100000',
  PADDOCK_HTTP_MAX_CONNECTIONS_PER_IP: '100000',
};

/** A data directory for sandboxes: sandboxes run as unprivileged host users, who must traverse it. */
export function sandboxDataDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `paddock-bench-${prefix}-`));
  chmodSync(dir, 0o711);
  return dir;
}

/**
 * The local runtime as the stack's processes run it (the configuration's defaults, on this data
 * directory: a disk of its own per sandbox, its limits, its agent), for the raw side of a comparison.
 */
export function localRuntimeOn(dataDir: string, settings: Record<string, string> = {}): SandboxRuntime {
  // The runtime reaches neither: they are required of every role, so named and never used.
  const env = { PADDOCK_RUNTIME: 'local', PADDOCK_DATA_DIR: dataDir, DATABASE_URL: 'postgres://unused', REDIS_URL: 'redis://unused', ...settings };
  return localRuntimeFrom(parseConfig(env, 'worker'), createLogger('warn', 'bench'));
}

/** Something that answers SQL: a pg client or pool. */
interface Queryable {
  query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>>;
}

/** Waits, untimed, until the deployment's warm pool holds `size` ready sandboxes. */
export async function warmPoolFull(db: Queryable, deployment: string, size: number, options: { timeoutMs: number; everyMs: number }): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from warm_sandboxes where deployment = $1 and status = 'ready'`, [deployment]);
    if (rows[0]!.n >= size) return;
    if (Date.now() > deadline) throw new Error(`the warm pool held ${rows[0]!.n} of ${size} after ${options.timeoutMs / 1000} s`);
    await delay(options.everyMs);
  }
}

/**
 * Starts the stack. `env` is laid over the defaults (UNLIMITED among them); `shape` asks for more
 * than one process of a role.
 */
export async function startStack(ctx: BenchContext, name: string, env: NodeJS.ProcessEnv = {}, shape: StackShape = {}): Promise<Stack> {
  const dataDir = sandboxDataDir(name);
  const shared: NodeJS.ProcessEnv = {
    PADDOCK_REDIS_PREFIX: `bench-${name}-${randomBytes(4).toString('hex')}`,
    PADDOCK_DATA_DIR: dataDir,
    PADDOCK_RUNTIME: 'local',
    ...UNLIMITED,
    ...env,
  };
  const webCount = shape.webs ?? 1;
  const workerCount = shape.workers ?? 1;
  const started: { pid: number; stop(): Promise<void> }[] = [];
  const stopAll = async () => {
    // Webs first (they enqueue), then workers (they finish the jobs).
    for (const p of started) await p.stop();
  };
  const webs: NodeProcess[] = [];
  const workers: { pid: number; metricsUrl: string }[] = [];
  try {
    for (let i = 0; i < webCount; i++) {
      const web = await startPaddock(ctx, 'info', { name: webCount > 1 ? `${name}-web-${i}` : `${name}-web`, env: shared });
      webs.push(web);
      started.push(web);
    }
    for (let i = 0; i < workerCount; i++) {
      const port = await freePort();
      const workerName = workerCount > 1 ? `${name}-worker-${i}` : `${name}-worker`;
      const worker = await startLoggingProcess({
        name: workerName,
        script: 'workers/main.ts',
        env: {
          ...process.env,
          ...sharedSecrets(),
          NODE_ENV: 'production',
          DATABASE_URL: ctx.databaseUrl,
          REDIS_URL: ctx.redisUrl,
          PADDOCK_DB_POOL_MAX: process.env.PADDOCK_DB_POOL_MAX ?? '10',
          PADDOCK_LOG_LEVEL: 'info',
          PADDOCK_WORKER_METRICS_PORT: String(port),
          ...shared,
        },
        logFile: logFile(ctx.dir, workerName),
        readyText: 'worker started',
        ...(ctx.profile ? { profileDir: join(ctx.dir, 'profiles') } : {}),
      });
      workers.push({ pid: worker.pid, metricsUrl: `http://127.0.0.1:${port}` });
      started.push(worker);
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  return {
    url: webs[0]!.url,
    urls: webs.map((w) => w.url),
    webPid: webs[0]!.pid,
    workerPid: workers[0]!.pid,
    webPids: webs.map((w) => w.pid),
    workerPids: workers.map((w) => w.pid),
    workerMetricsUrls: workers.map((w) => w.metricsUrl),
    dataDir,
    deployment: shared.PADDOCK_REDIS_PREFIX!,
    async stop() {
      await stopAll();
      await removeDataDir(dataDir);
    },
  };
}

/** Destroys whatever sandboxes are left in a data directory, then removes it. */
export async function removeDataDir(dataDir: string): Promise<void> {
  const runtime = localRuntimeOn(dataDir);
  try {
    const left = await runtime.list();
    for (let i = 0; i < left.length; i += 20) {
      await Promise.all(left.slice(i, i + 20).map((s) => runtime.destroy(s.id).catch(() => undefined)));
    }
  } finally {
    await runtime.close();
  }
  rmSync(dataDir, { recursive: true, force: true });
}

export interface ApiAnswer {
  status: number;
  body: unknown;
  ms: number;
}

/** One call to the public API with an API key, timed from the request to the parsed answer. */
export async function call(baseUrl: string, key: string, method: string, path: string, body?: unknown): Promise<ApiAnswer> {
  const started = performance.now();
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined, ms };
}

/** As call, but a non-2xx answer is an error. */
export async function callOk(baseUrl: string, key: string, method: string, path: string, body?: unknown): Promise<ApiAnswer> {
  const answer = await call(baseUrl, key, method, path, body);
  if (answer.status >= 300) throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer;
}

export interface SandboxObject {
  id: string;
  status: string;
  state: string;
  createdAt: string;
  readyAt: string | null;
  expiresAt: string;
  destroyedAt: string | null;
  destroyReason: string | null;
}

export async function createRunningSandbox(baseUrl: string, key: string): Promise<SandboxObject> {
  const sandbox = (await callOk(baseUrl, key, 'POST', '/v1/sandboxes', {})).body as SandboxObject;
  if (sandbox.status !== 'running') throw new Error(`sandbox ${sandbox.id} is ${sandbox.status}, not running`);
  return sandbox;
}

/** Nearest-rank percentile of samples in ms, rounded to 0.1 ms. */
export function percentile(samples: number[], p: number): number {
  return round(unroundedPercentile(samples, p));
}

/** The same, unrounded: for a ratio of two, which a tenth of a millisecond on each side moves by several per cent near 1 ms. */
export function unroundedPercentile(samples: number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** The middle sample (the upper one of an even count), unrounded; 0 for none. */
export function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

export function round(ms: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(ms * f) / f;
}

/** Runs fn over items with at most `limit` at a time. */
export async function inBatches<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(lanes);
  return results;
}
