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
import { startKubeStandin } from '../k8s-standin/index.ts';
import { testConfig } from './config.ts';

export type TestRuntime = 'local' | 'kubernetes';

/** The runtime this run of the suite exercises: `npm test` runs the suite once for each. */
export function testRuntime(): TestRuntime {
  return process.env.PADDOCK_TEST_RUNTIME === 'kubernetes' ? 'kubernetes' : 'local';
}

export interface SandboxStack {
  config: Config;
  apis: RunningApi[];
  workers: RunningWorkers[];
  /** The first API's base URL. */
  url: string;
  kubeConfig?: KubeConfig;
  /** Starts one more worker process-equivalent on the same queue and runtime. */
  addWorker(overrides?: { reaper?: boolean }): Promise<RunningWorkers>;
}

/**
 * A whole Paddock for one test file: API instance(s), worker(s) and the runtime under test (the
 * local bubblewrap runtime, or the Kubernetes runtime against the API stand-in backed by local
 * sandboxes), all on the real PostgreSQL and Redis, with a Redis prefix and data folder of its own.
 */
export async function startSandboxStack(
  options: { overrides?: Record<string, string>; apis?: number; workers?: number; reaper?: boolean; logLines?: string[] } = {},
): Promise<SandboxStack> {
  const runtime = testRuntime();
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-test-'));
  chmodSync(dataDir, 0o711); // sandboxes run as unprivileged users, who must reach their folders
  const config = testConfig({
    PADDOCK_RUNTIME: runtime,
    PADDOCK_DATA_DIR: join(dataDir, 'paddock'),
    PADDOCK_LOCAL_MEMORY_MB: '256',
    PADDOCK_LOCAL_PIDS_MAX: '128',
    PADDOCK_KUBE_ALLOWED_IMAGES: 'docker.io/library/python:3.12-slim,registry.example/does-not-exist:1',
    PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: '1000',
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '10000',
    ...options.overrides,
  });

  // One teardown, in order: APIs, then workers (finishing their jobs), then what the runtime holds.
  const apis: RunningApi[] = [];
  const workers: RunningWorkers[] = [];
  let backend: SandboxRuntime | undefined;
  let standin: { close(): Promise<void> } | undefined;
  after(async () => {
    for (const api of apis) await api.close();
    for (const w of workers) await w.close();
    await standin?.close();
    const held = backend ?? localRuntimeOf(config);
    for (const s of await held.list()) await held.destroy(s.id).catch(() => undefined);
    await held.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  let kubeConfig: KubeConfig | undefined;
  if (runtime === 'kubernetes') {
    backend = createLocalRuntime({ dataDir: join(dataDir, 'cluster'), network: false, memoryMb: 256, pidsMax: 128 });
    const started = await startKubeStandin({ backend });
    standin = started;
    kubeConfig = started.kubeConfig;
  }

  // With logLines, every process logs at debug level into that array, for tests that read the logs.
  const capture = options.logLines && { write: (line: string) => void options.logLines!.push(line) };
  const log = capture ? createLogger('debug', 'worker', capture) : createLogger(config.PADDOCK_LOG_LEVEL, 'worker');
  const apiLog = capture ? createLogger('debug', 'web', capture) : undefined;
  const addWorker = async (o: { reaper?: boolean } = {}) => {
    const w = await startWorkers(config, log, { kubeConfig, reaper: o.reaper ?? options.reaper ?? true });
    workers.push(w);
    return w;
  };
  for (let i = 0; i < (options.workers ?? 1); i++) await addWorker();
  for (let i = 0; i < (options.apis ?? 1); i++) apis.push(await startApi(config, { kubeConfig, log: apiLog }));
  return { config, apis, workers, url: apis[0]!.url, kubeConfig, addWorker };
}

function localRuntimeOf(config: Config): SandboxRuntime {
  return createLocalRuntime({
    dataDir: config.PADDOCK_DATA_DIR,
    network: false,
    memoryMb: config.PADDOCK_LOCAL_MEMORY_MB,
    pidsMax: config.PADDOCK_LOCAL_PIDS_MAX,
  });
}
