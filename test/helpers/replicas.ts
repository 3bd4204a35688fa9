import { after } from 'node:test';
import { rmSync } from 'node:fs';
import { createServer, request as httpRequest, Agent, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../../shared/config.ts';
import { createLogger } from '../../shared/logger.ts';
import { createRuntime } from '../../shared/runtime/index.ts';
import type { SandboxRuntime } from '../../shared/runtime/types.ts';
import { envOf, exited, startRole } from './processes.ts';
import { runtimeTestConfig, startStandinCluster } from './sandbox-stack.ts';

// Paddock as production runs it: the Procfile roles as real processes, several of each, on one
// PostgreSQL and one Redis, behind one base URL (a round-robin proxy standing in for the load
// balancer). Fault tests kill, stop and restart the processes; the suites run through it unchanged.

export type Role = 'web' | 'worker';

export interface RoleProcess {
  role: Role;
  index: number;
  /** The web's own base URL (bypassing the proxy), or the worker's metrics and health server. */
  url: string;
  port: number;
  child: ReturnType<typeof startRole>;
  /** Everything the process wrote so far (JSON log lines). */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
}

export interface Replicas {
  /** The proxy's base URL: round robin over the webs that are up. */
  url: string;
  webs: RoleProcess[];
  workers: RoleProcess[];
  config: Config;
  kubeConfig?: KubeConfig;
  /** The runtime as seen from the test process (lists and destroys what the workers made). */
  runtime: SandboxRuntime;
  /** A small pool on the same database, for checks. */
  db: pg.Pool;
  /** Sends the signal; the proxy stops routing to the process at once. Resolves with its exit. */
  kill(role: Role, index: number, signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Starts a fresh process in the slot (a web keeps its port) and waits until it is ready. */
  restart(role: Role, index: number): Promise<RoleProcess>;
  /** The proxy's count of requests it could not pass on (no web up, or the web went away). */
  proxyErrors(): number;
  close(): Promise<void>;
}

export interface ReplicaOptions {
  webs?: number;
  workers?: number;
  overrides?: Record<string, string>;
  /** A PostgreSQL of the test's own (migrated); default the shared one. */
  databaseUrl?: string;
  /** A Redis of the test's own; default the shared one. */
  redisUrl?: string;
  /** How long a process may take to become ready (the machine is shared and often loaded). */
  readyTimeoutMs?: number;
}

const DEFAULT_READY_TIMEOUT_MS = 90_000;

function parseLogLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

export async function startReplicas(options: ReplicaOptions = {}): Promise<Replicas> {
  const { dir, config } = runtimeTestConfig('paddock-replicas-', {
    PADDOCK_SHUTDOWN_TIMEOUT_SECONDS: '20',
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    ...options.overrides,
  });
  const readyTimeoutMs = options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
  const log = createLogger('silent', 'test');

  const cluster = await startStandinCluster(dir);
  const kubeConfig = cluster?.kubeConfig;
  const runtime = await createRuntime(config, log, { kubeConfig });
  const db = new pg.Pool({ connectionString: config.DATABASE_URL, max: 4, connectionTimeoutMillis: 3000 });
  db.on('error', () => undefined); // idle clients cut by a PostgreSQL restart: the next query reconnects

  // At least info: the tests read the processes' logs ("stopped", access lines).
  const verbose = ['debug', 'trace'].includes(process.env.PADDOCK_TEST_LOG_LEVEL ?? '');
  const baseEnv: NodeJS.ProcessEnv = {
    ...envOf(config, kubeConfig),
    PADDOCK_LOG_LEVEL: verbose ? process.env.PADDOCK_TEST_LOG_LEVEL : 'info',
  };
  const webs: RoleProcess[] = [];
  const workers: RoleProcess[] = [];
  const unrouted = new Set<RoleProcess>();

  // A process binds the port its slot holds, or any free one (0) on its first start and reports
  // it in its log: a port picked here and bound there could be taken in between by another stack's
  // process, whose answers the probes below would then take for this one's.
  const spawnRole = (role: Role, index: number, port = 0): RoleProcess => {
    const env = { ...baseEnv, [role === 'web' ? 'PORT' : 'PADDOCK_WORKER_METRICS_PORT']: String(port) };
    const child = startRole(role === 'web' ? 'api/main.ts' : 'workers/main.ts', env);
    const proc: RoleProcess = {
      role,
      index,
      url: `http://127.0.0.1:${port}`,
      port,
      child,
      output: child.output,
      exited: exited(child),
      alive: () => child.exitCode === null && child.signalCode === null,
    };
    return proc;
  };

  /** The port the process says it bound, once its log says so. */
  const boundPort = (proc: RoleProcess): number | undefined => {
    for (const line of proc.output().split('\n')) {
      const entry = parseLogLine(line);
      if (proc.role === 'web' && entry?.msg === 'listening' && typeof entry.url === 'string') return Number(new URL(entry.url).port);
      if (proc.role === 'worker' && entry?.msg === 'worker started' && typeof entry.metricsPort === 'number') return entry.metricsPort;
    }
    return undefined;
  };

  const waitReady = async (proc: RoleProcess): Promise<void> => {
    const deadline = Date.now() + readyTimeoutMs;
    let lastAnswer = 'none';
    while (Date.now() < deadline) {
      if (!proc.alive()) throw new Error(`${proc.role} ${proc.index} exited (${proc.child.exitCode}) while starting: ${proc.output().slice(-4000)}`);
      const port = boundPort(proc);
      if (port === undefined) {
        await sleep(50);
        continue;
      }
      if (proc.port !== 0 && port !== proc.port) throw new Error(`${proc.role} ${proc.index} bound ${port}, not its slot's ${proc.port}`);
      proc.port = port;
      proc.url = `http://127.0.0.1:${port}`;
      // A web is ready when /readyz says so; a worker when its health server answers (it starts
      // once the job processors run).
      const probe = `${proc.url}/${proc.role === 'web' ? 'readyz' : 'healthz'}`;
      const ok = await fetch(probe, { signal: AbortSignal.timeout(5000) }).then(
        async (r) => {
          lastAnswer = `${r.status} ${await r.text()}`;
          return r.status === 200;
        },
        (err: Error) => {
          lastAnswer = String(err);
          return false;
        },
      );
      if (ok) return;
      await sleep(50);
    }
    throw new Error(`${proc.role} ${proc.index} not ready within ${readyTimeoutMs} ms (its last answer: ${lastAnswer}): ${proc.output().slice(-4000)}`);
  };

  // The load balancer: round robin over the webs that are up, bodies streamed both ways.
  let next = 0;
  let proxyErrors = 0;
  const agent = new Agent({ keepAlive: false });
  const proxy: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const candidates = webs.filter((w) => w.alive() && !unrouted.has(w));
    if (candidates.length === 0) {
      proxyErrors++;
      res.writeHead(502, { 'content-type': 'text/plain' }).end('no web process is up');
      return;
    }
    const target = candidates[next++ % candidates.length]!;
    const upstream = httpRequest(
      { host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers: req.headers, agent },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, upRes.rawHeaders);
        upRes.pipe(res);
        upRes.on('error', () => res.destroy());
        upRes.on('aborted', () => res.destroy());
      },
    );
    upstream.on('error', () => {
      proxyErrors++;
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { 'content-type': 'text/plain' }).end('the web process went away');
    });
    req.pipe(upstream);
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
  });
  proxy.keepAliveTimeout = 65_000; // as the webs: clients are told the same keep-alive timeout
  proxy.headersTimeout = 66_000;
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      await new Promise<void>((resolve) => {
        proxy.close(() => resolve());
        proxy.closeAllConnections();
      });
      // Webs first (they enqueue), then workers (they finish their jobs).
      for (const group of [webs, workers]) {
        await Promise.all(
          group.map(async (p) => {
            if (!p.alive()) return;
            p.child.kill('SIGCONT'); // a test that failed while it had paused the process
            p.child.kill('SIGTERM');
            const done = await Promise.race([p.exited.then(() => true), sleep(30_000).then(() => false)]);
            if (!done) p.child.kill('SIGKILL');
            await p.exited;
          }),
        );
      }
      const held = cluster?.backend ?? runtime;
      for (const s of await held.list().catch(() => [])) await held.destroy(s.id).catch(() => undefined);
      await runtime.close();
      await cluster?.standin.close();
      await cluster?.backend.close();
      await db.end().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
      if (baseEnv.KUBECONFIG) rmSync(dirname(baseEnv.KUBECONFIG), { recursive: true, force: true });
    })());
  after(close);

  for (let i = 0; i < (options.workers ?? 2); i++) workers.push(spawnRole('worker', i));
  for (let i = 0; i < (options.webs ?? 2); i++) webs.push(spawnRole('web', i));
  await Promise.all([...workers, ...webs].map(waitReady));

  const slot = (role: Role) => (role === 'web' ? webs : workers);
  return {
    url,
    webs,
    workers,
    config,
    kubeConfig,
    runtime,
    db,
    async kill(role, index, signal = 'SIGKILL') {
      const proc = slot(role)[index];
      if (!proc) throw new Error(`no ${role} ${index}`);
      unrouted.add(proc);
      proc.child.kill(signal);
      return proc.exited;
    },
    async restart(role, index) {
      const old = slot(role)[index];
      if (old?.alive()) {
        unrouted.add(old);
        old.child.kill('SIGKILL');
        await old.exited;
      }
      const proc = spawnRole(role, index, old?.port);
      unrouted.add(proc);
      slot(role)[index] = proc;
      await waitReady(proc);
      unrouted.delete(proc);
      return proc;
    },
    proxyErrors: () => proxyErrors,
    close,
  };
}
