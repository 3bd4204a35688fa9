import { after } from 'node:test';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../../shared/config.ts';
import { createLogger } from '../../shared/logger.ts';
import { createLocalRuntime } from '../../shared/runtime/local/index.ts';
import { startWorkers, type RunningWorkers } from '../../workers/workers.ts';
import { startApi, type RunningApi } from '../../api/server.ts';
import type { SandboxRuntime } from '../../shared/runtime/types.ts';
import type { KubeStandin } from '../k8s-standin/index.ts';
import { TEST_SANDBOXES_CPU_WEIGHT, testConfig } from './config.ts';
import type { WebhookTransport } from '../../shared/webhooks/transport.ts';
import { offlineTransport } from './webhooks.ts';

/** How often a teardown still running says what it waits on. */
const TEARDOWN_REPORT_MS = 60_000;

export type TestRuntime = 'local' | 'kubernetes';

/** The runtime this run of the suite exercises: `npm test` runs the suite once for each. */
export function testRuntime(): TestRuntime {
  return process.env.PADDOCK_TEST_RUNTIME === 'kubernetes' ? 'kubernetes' : 'local';
}

/**
 * A data folder of the test's own, and a config for the runtime under test on it: small sandbox
 * limits for a shared machine, and rate limits that only a test meaning to will reach.
 */
export function runtimeTestConfig(prefix: string, overrides: Record<string, string> = {}): { dir: string; config: Config } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o711); // sandboxes run as unprivileged users, who must reach their folders
  const config = testConfig({
    PADDOCK_RUNTIME: testRuntime(),
    PADDOCK_DATA_DIR: join(dir, 'paddock'),
    PADDOCK_LOCAL_MEMORY_MB: '256',
    PADDOCK_LOCAL_PIDS_MAX: '128',
    PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: '1000',
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '10000',
    ...overrides,
  });
  return { dir, config };
}

export interface StandinCluster {
  /** The local runtime whose sandboxes stand behind the stand-in's pods. */
  backend: SandboxRuntime;
  standin: KubeStandin;
  kubeConfig: KubeConfig;
}

/**
 * Under the kubernetes runtime, the Kubernetes API stand-in, its pods local sandboxes in
 * `dir`/cluster, as there is no cluster to test against; nothing under the local runtime.
 */
export async function startStandinCluster(dir: string, diskMb = 2048, pidsMax = 128): Promise<StandinCluster | undefined> {
  if (testRuntime() !== 'kubernetes') return undefined;
  // Loaded here: the Kubernetes client costs every local test process most of a second of CPU.
  const { startKubeStandin } = await import('../k8s-standin/index.ts');
  const backend = createLocalRuntime({ dataDir: join(dir, 'cluster'), memoryMb: 256, pidsMax, diskMb, sandboxesCpuWeight: TEST_SANDBOXES_CPU_WEIGHT });
  const standin = await startKubeStandin({ backend }).catch(async (err: unknown) => {
    await backend.close();
    throw err;
  });
  return { backend, standin, kubeConfig: standin.kubeConfig };
}

/** Images the suites create sandboxes from, besides the default: one real, one that cannot be pulled. */
export const SUITE_IMAGES = { PADDOCK_KUBE_ALLOWED_IMAGES: 'docker.io/library/python:3.12-slim,registry.example/does-not-exist:1' };

export interface SandboxStack {
  config: Config;
  apis: RunningApi[];
  workers: RunningWorkers[];
  /** The first API's base URL. */
  url: string;
  kubeConfig?: KubeConfig;
  /** The Kubernetes API stand-in, on the kubernetes runtime. */
  standin?: KubeStandin;
  /** Starts one more worker process-equivalent on the same queue and runtime. */
  addWorker(overrides?: { reaper?: boolean }): Promise<RunningWorkers>;
}

/**
 * A whole Paddock for one test file: API instance(s), worker(s) and the runtime under test (the
 * local bubblewrap runtime, or the Kubernetes runtime against the API stand-in backed by local
 * sandboxes), all on the real PostgreSQL and Redis, with a Redis prefix and data folder of its own.
 */
export async function startSandboxStack(
  options: {
    overrides?: Record<string, string>;
    apis?: number;
    workers?: number;
    reaper?: boolean;
    logLines?: string[];
    /** How the workers' webhook deliveries resolve and connect (test/helpers/webhooks.ts); default: no network at all. */
    webhookTransport?: WebhookTransport;
  } = {},
): Promise<SandboxStack> {
  const { dir: dataDir, config } = runtimeTestConfig('paddock-test-', { ...SUITE_IMAGES, ...options.overrides });

  // One teardown, in order: APIs, then workers (finishing their jobs), then what the runtime holds.
  // Registered once the stack runs, or run at once if starting fails: an after hook registered
  // before a test of the file that ends while the stack starts would run then, and stop it.
  const apis: RunningApi[] = [];
  const workers: RunningWorkers[] = [];
  let cluster: StandinCluster | undefined;
  let tearingDown = 'the APIs';
  const teardown = async () => {
    // A teardown that hangs says what it waits on, where the run's deadline would only say it hung.
    const slow = setInterval(() => {
      const steps = workers.flatMap((w) => w.shutdownSteps.pending());
      process.stderr.write(`the stack's teardown still waits on ${tearingDown}${steps.length ? ` (${steps.join(', ')})` : ''}\n`);
    }, TEARDOWN_REPORT_MS);
    try {
      for (const api of apis) await api.close();
      tearingDown = 'the workers';
      for (const w of workers) await w.close();
      tearingDown = 'the runtime';
      await cluster?.standin.close();
      const held = cluster?.backend ?? localRuntimeOf(config);
      for (const s of await held.list()) await held.destroy(s.id).catch(() => undefined);
      await held.close();
      rmSync(dataDir, { recursive: true, force: true });
    } finally {
      clearInterval(slow);
    }
  };
  let stack: SandboxStack;
  try {
    stack = await startStack(config, dataDir, options, apis, workers, (c) => (cluster = c));
  } catch (err) {
    await teardown().catch(() => undefined);
    throw err;
  }
  after(teardown);
  return stack;
}

type StackOptions = Parameters<typeof startSandboxStack>[0] & {};

async function startStack(
  config: Config,
  dataDir: string,
  options: StackOptions,
  apis: RunningApi[],
  workers: RunningWorkers[],
  started: (cluster: StandinCluster | undefined) => void,
): Promise<SandboxStack> {
  // A suite that sizes the local sandboxes' disk or process limit sizes the stand-in's pods' alike.
  const cluster = await startStandinCluster(
    dataDir,
    options.overrides?.PADDOCK_LOCAL_DISK_MB ? config.PADDOCK_LOCAL_DISK_MB : undefined,
    options.overrides?.PADDOCK_LOCAL_PIDS_MAX ? config.PADDOCK_LOCAL_PIDS_MAX : undefined,
  );
  started(cluster);
  const kubeConfig = cluster?.kubeConfig;

  // With logLines, every process logs at debug level into that array, for tests that read the logs.
  const capture = options.logLines && { write: (line: string) => void options.logLines!.push(line) };
  const log = capture ? createLogger('debug', 'worker', capture) : createLogger(config.PADDOCK_LOG_LEVEL, 'worker');
  const apiLog = capture ? createLogger('debug', 'web', capture) : undefined;
  const addWorker = async (o: { reaper?: boolean } = {}) => {
    const w = await startWorkers(config, log, { kubeConfig, reaper: o.reaper ?? options.reaper ?? true, webhookTransport: options.webhookTransport ?? offlineTransport });
    workers.push(w);
    return w;
  };
  for (let i = 0; i < (options.workers ?? 1); i++) await addWorker();
  for (let i = 0; i < (options.apis ?? 1); i++) apis.push(await startApi(config, { kubeConfig, log: apiLog }));
  return { config, apis, workers, url: apis[0]!.url, kubeConfig, standin: cluster?.standin, addWorker };
}

function localRuntimeOf(config: Config): SandboxRuntime {
  return createLocalRuntime({
    dataDir: config.PADDOCK_DATA_DIR,
    memoryMb: config.PADDOCK_LOCAL_MEMORY_MB,
    pidsMax: config.PADDOCK_LOCAL_PIDS_MAX,
    sandboxesCpuWeight: config.PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT,
  });
}
