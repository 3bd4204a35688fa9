import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalRuntime } from '../../shared/runtime/local/index.ts';
import type { SandboxRuntime, SandboxSpec } from '../../shared/runtime/types.ts';
import { startKubeStandin, type KubeStandin } from './index.ts';
import { TEST_SANDBOXES_CPU_WEIGHT } from '../helpers/config.ts';

/** The local runtime behind the stand-in, with the calls the stand-in made counted. */
export interface ObservedBackend extends SandboxRuntime {
  /** Backend ids the stand-in created, in order. */
  created: string[];
  destroyed: string[];
  /** Makes every following create take this much longer (a slow image pull, say). */
  createDelayMs: number;
}

export interface StandinFixture {
  standin: KubeStandin;
  backend: ObservedBackend;
  close(): Promise<void>;
}

/**
 * A stand-in backed by real bubblewrap sandboxes in a temporary data directory. The caller
 * closes it (in after()); closing destroys every sandbox and removes the directory.
 */
export async function startStandinFixture(options: { pullBackOffMs?: number; eventWindow?: number; podIp?: (name: string) => string | undefined } = {}): Promise<StandinFixture> {
  const dataDir = await mkdtemp(join(tmpdir(), 'paddock-k8s-standin-'));
  const local = createLocalRuntime({ dataDir, memoryMb: 512, pidsMax: 256, sandboxesCpuWeight: TEST_SANDBOXES_CPU_WEIGHT });
  const backend = observe(local);
  const standin = await startKubeStandin({ backend, ...options });
  return {
    standin,
    backend,
    async close() {
      await standin.close();
      for (const s of await local.list()) await local.destroy(s.id).catch(() => undefined);
      await local.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function observe(runtime: SandboxRuntime): ObservedBackend {
  const observed: ObservedBackend = {
    name: runtime.name,
    defaultImage: runtime.defaultImage,
    egressByName: runtime.egressByName,
    egressBrokering: runtime.egressBrokering,
    resolveImage: (requested) => runtime.resolveImage(requested),
    created: [],
    destroyed: [],
    createDelayMs: 0,
    async create(spec: SandboxSpec, options?: { timeoutMs?: number }) {
      observed.created.push(spec.id);
      if (observed.createDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, observed.createDelayMs));
      return runtime.create(spec, options);
    },
    async destroy(id: string) {
      observed.destroyed.push(id);
      return runtime.destroy(id);
    },
    get: (id) => runtime.get(id),
    list: () => runtime.list(),
    exec: (id, request) => runtime.exec(id, request),
    terminal: (id, request) => runtime.terminal(id, request),
    openPort: (id: string, port: number, options?: { signal?: AbortSignal }) => runtime.openPort(id, port, options),
    setNetwork: (id, policy) => runtime.setNetwork(id, policy),
    close: () => runtime.close(),
  };
  return observed;
}
