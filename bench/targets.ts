import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { freePort } from '../scripts/services.ts';
import type { BenchContext } from './types.ts';
import { deployedMemoryLimitMb } from './memory-limit.ts';
import { logFile, startLoggingProcess, startNodeProcess, type NodeProcess } from './processes.ts';

const POOL_MAX = process.env.PADDOCK_DB_POOL_MAX ?? '10';
// Shared by every Paddock process of a run, so a key minted through one works on the others.
const JWT_SECRET = randomBytes(32).toString('hex');
const SECRETS_KEY = randomBytes(32).toString('hex');

/** The secrets every Paddock process of this run shares (the worker needs the web role's). */
export function sharedSecrets(): NodeJS.ProcessEnv {
  return { PADDOCK_JWT_SECRET: JWT_SECRET, PADDOCK_SECRETS_KEY: SECRETS_KEY };
}

function baseEnv(ctx: BenchContext, port: number): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: ctx.databaseUrl,
    REDIS_URL: ctx.redisUrl,
    PORT: String(port),
    PADDOCK_DB_POOL_MAX: POOL_MAX,
  };
}

function profileDir(ctx: BenchContext): string | undefined {
  return ctx.profile ? join(ctx.dir, 'profiles') : undefined;
}

/** The floor server of `account` and its reads (bench/floor-server.ts). */
export function startFloor(ctx: BenchContext): Promise<NodeProcess> {
  return startFloorScript(ctx, 'floor', 'bench/floor-server.ts');
}

/** The lifecycle's floor (bench/lifecycle-floor.ts): its server, and its worker as a process of its own. */
export async function startLifecycleFloor(ctx: BenchContext): Promise<NodeProcess> {
  const server = await startFloorScript(ctx, 'lifecycle-floor', 'bench/lifecycle-floor.ts');
  try {
    const port = new URL(server.url).port;
    const worker = await startLoggingProcess({
      name: 'lifecycle-floor-worker',
      script: 'bench/lifecycle-floor.ts',
      env: { ...baseEnv(ctx, Number(port)), ROLE: 'worker' },
      logFile: logFile(ctx.dir, 'lifecycle-floor-worker'),
      readyText: 'floor worker started',
      ...(profileDir(ctx) ? { profileDir: profileDir(ctx) } : {}),
    });
    return { ...server, stop: () => Promise.all([server.stop(), worker.stop()]).then(() => undefined) };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/** The burst's floor (bench/burst-floor.ts). */
export function startBurstFloor(ctx: BenchContext): Promise<NodeProcess> {
  return startFloorScript(ctx, 'burst-floor', 'bench/burst-floor.ts');
}

async function startFloorScript(ctx: BenchContext, name: string, script: string): Promise<NodeProcess> {
  const port = await freePort();
  return startNodeProcess({
    name,
    script,
    env: baseEnv(ctx, port),
    port,
    readyPath: '/',
    logFile: logFile(ctx.dir, name),
    profileDir: profileDir(ctx),
    // On the same footing as the web it is compared with.
    memoryLimitMb: WEB_MEMORY_LIMIT_MB,
  });
}

/** The web's memory limit in its Kubernetes deployment, under which the bench runs it too. */
export const WEB_MEMORY_LIMIT_MB = deployedMemoryLimitMb('api-deployment.yaml');

/**
 * The `web` role exactly as production runs it (Procfile: `node api/main.ts`), under its
 * deployment's memory limit (Node sizes its heap from it).
 */
export async function startPaddock(
  ctx: BenchContext,
  logLevel: string,
  options: { name?: string; env?: NodeJS.ProcessEnv; /** another checkout's (bench/ab.ts) */ script?: string } = {},
): Promise<NodeProcess> {
  const port = await freePort();
  const name = options.name ?? `paddock-log-${logLevel}`;
  return startNodeProcess({
    name,
    script: options.script ?? 'api/main.ts',
    env: {
      ...baseEnv(ctx, port),
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PADDOCK_JWT_SECRET: JWT_SECRET,
      PADDOCK_SECRETS_KEY: SECRETS_KEY,
      // The web role builds the sandbox runtime at start; keep its files apart from the dev stack's.
      PADDOCK_DATA_DIR: join(ctx.dir, 'data'),
      PADDOCK_LOG_LEVEL: logLevel,
      // Every run signs up a fresh account; the production limit (10 a minute) would refuse reruns.
      PADDOCK_RATE_AUTH_PER_MIN: '100000',
      // The floor has no rate limit to answer 429 from: every request here must be served in full
      // (the bucket's round trip is still taken on every one).
      PADDOCK_RATE_ACCOUNT_PER_MIN: '100000000',
      ...options.env,
    },
    port,
    readyPath: '/readyz',
    logFile: logFile(ctx.dir, name),
    profileDir: profileDir(ctx),
    memoryLimitMb: WEB_MEMORY_LIMIT_MB,
  });
}

/** Signs up an account and mints an API key for it, through the public API as a client would. */
export async function signUp(baseUrl: string): Promise<{ accountId: string; key: string }> {
  const email = `bench-${randomBytes(6).toString('hex')}@example.com`;
  const signup = (await postJson(`${baseUrl}/v1/auth/signup`, { email, password: randomBytes(16).toString('hex') })) as { account: { id: string }; token: string };
  const created = await postJson(`${baseUrl}/v1/api-keys`, { name: 'bench' }, signup.token);
  return { accountId: signup.account.id, key: (created as { key: string }).key };
}

export async function mintApiKey(baseUrl: string): Promise<string> {
  return (await signUp(baseUrl)).key;
}

export async function postJson(url: string, body: unknown, bearer?: string): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${url} answered ${res.status}: ${text}`);
  return JSON.parse(text) as unknown;
}
