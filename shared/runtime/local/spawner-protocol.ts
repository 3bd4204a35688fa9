import type { ExecResult } from '../types.ts';

/** Messages from the runtime to its command spawner. */
export type ToSpawner =
  | { type: 'run'; id: number; commandLine: string[]; timeoutMs: number; stdin?: Uint8Array }
  | { type: 'abort'; id: number };

/** Messages from the spawner: `ready` once, then per command `started`, output, and `done` or `failed`. */
export type FromSpawner =
  | { type: 'ready' }
  | { type: 'started'; id: number; pid: number }
  | { type: 'stdout' | 'stderr'; id: number; data: Uint8Array }
  | { type: 'done'; id: number; result: ExecResult }
  | { type: 'failed'; id: number; message: string };
