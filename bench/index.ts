import type { Benchmark } from './types.ts';
import { accountBenchmark } from './account.ts';

/** Every benchmark, in the order `npm run bench` runs them; add new ones here. */
export const benchmarks: Benchmark[] = [accountBenchmark];
