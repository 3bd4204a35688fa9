import type { SandboxRuntime } from '../types.ts';
import type { LocalRuntimeOptions } from './options.ts';
import { localRuntime } from './runtime.ts';

// The `local` runtime: each sandbox is a long-lived bubblewrap environment on this host, entered
// with nsenter for every exec, its state on disk under dataDir so any Paddock process can use it.

export type { LocalRuntimeOptions } from './options.ts';

export function createLocalRuntime(options: LocalRuntimeOptions): SandboxRuntime {
  return localRuntime(options);
}
