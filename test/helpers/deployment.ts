import type { Config } from '../../shared/config.ts';
import type { SandboxRuntime } from '../../shared/runtime/types.ts';
import { startReplicas } from './replicas.ts';
import { startSandboxStack, SUITE_IMAGES } from './sandbox-stack.ts';

// The deployment a suite runs against, so the same suite file runs unchanged in-process (the
// default: fast, one process) and through the replicas harness (PADDOCK_TEST_DEPLOYMENT=replicas:
// two `web` and two `worker` processes behind a round-robin proxy). Suites that use it reach
// Paddock over HTTP only, and the runtime and the database through the handles below.

export interface Deployment {
  /** The base URL clients use (through the proxy, with replicas). */
  url: string;
  /** One base URL per API instance (each web's own, with replicas), for tests that pick one. */
  apiUrls: string[];
  config: Config;
  /** The runtime's view of what it holds, from the test process. */
  runtime: SandboxRuntime;
  /** A query on Paddock's database (`$1` placeholders). */
  sql(query: string, params?: unknown[]): Promise<unknown[]>;
}

export function deploymentKind(): 'in-process' | 'replicas' {
  return process.env.PADDOCK_TEST_DEPLOYMENT === 'replicas' ? 'replicas' : 'in-process';
}

export async function startDeployment(options: { overrides?: Record<string, string>; apis?: number } = {}): Promise<Deployment> {
  if (deploymentKind() === 'replicas') {
    const replicas = await startReplicas({ webs: Math.max(2, options.apis ?? 2), workers: 2, overrides: { ...SUITE_IMAGES, ...options.overrides } });
    return {
      url: replicas.url,
      apiUrls: replicas.webs.map((w) => w.url),
      config: replicas.config,
      runtime: replicas.runtime,
      sql: async (query, params) => (await replicas.db.query(query, params)).rows,
    };
  }
  const stack = await startSandboxStack({ apis: options.apis, overrides: options.overrides });
  return {
    url: stack.url,
    apiUrls: stack.apis.map((a) => a.url),
    config: stack.config,
    runtime: stack.workers[0]!.deps.runtime,
    sql: async (query, params = []) => (await stack.apis[0]!.deps.pg.query(query, params)).rows,
  };
}
