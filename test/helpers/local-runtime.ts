import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { newId } from '../../shared/ids.ts';
import { createLocalRuntime, type LocalRuntimeOptions } from '../../shared/runtime/local/index.ts';
import type { ExecRequest, SandboxRuntime } from '../../shared/runtime/types.ts';
import { TEST_SANDBOXES_CPU_WEIGHT } from './config.ts';
import type { NetworkPolicy } from '../../shared/network/policy.ts';

// The local runtime straight, with no API in front: for the tests that try it against real
// bubblewrap.

export interface LocalRuntimeSetup {
  runtime: SandboxRuntime;
  options: LocalRuntimeOptions;
  /** A new running sandbox's id; its network as `network` says (none by default). */
  sandbox(network?: NetworkPolicy): Promise<string>;
}

/** A local runtime on a dataDir of the test's own; whatever it still holds goes when the test ends. */
export async function setupLocalRuntime(t: TestContext, overrides: Partial<LocalRuntimeOptions> = {}): Promise<LocalRuntimeSetup> {
  const dataDir = await mkdtemp(join(tmpdir(), 'paddock-local-'));
  const options: LocalRuntimeOptions = { dataDir, memoryMb: 256, pidsMax: 128, sandboxesCpuWeight: TEST_SANDBOXES_CPU_WEIGHT, ...overrides };
  const runtime = createLocalRuntime(options);
  t.after(async () => {
    for (const sandbox of await runtime.list()) await runtime.destroy(sandbox.id);
    await runtime.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  return {
    runtime,
    options,
    async sandbox(network) {
      const id = newId('sbx');
      await runtime.create({ id, accountId: 'acct_test', capSeconds: 600, ...(network ? { network } : {}) });
      return id;
    },
  };
}

/** Execs `argv` in the sandbox and collects its output as text. */
export async function run(runtime: SandboxRuntime, id: string, argv: string[], request: Partial<ExecRequest> = {}) {
  let stdout = '';
  let stderr = '';
  const result = await runtime.exec(id, {
    argv,
    timeoutMs: 10_000,
    onStdout: (chunk) => void (stdout += Buffer.from(chunk).toString()),
    onStderr: (chunk) => void (stderr += Buffer.from(chunk).toString()),
    ...request,
  });
  return { ...result, stdout, stderr };
}
