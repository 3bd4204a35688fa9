import type { Benchmark } from './types.ts';
import { accountBenchmark } from './account.ts';
import { createBenchmark } from './create.ts';
import { execBenchmark } from './exec.ts';
import { expiryBenchmark } from './expiry.ts';
import { filesBenchmark } from './files.ts';
import { fleetBenchmark } from './fleet/index.ts';
import { getSandboxBenchmark } from './get-sandbox.ts';

/** Every benchmark, in the order `npm run bench` runs them; add new ones here. */
export const benchmarks: Benchmark[] = [accountBenchmark, createBenchmark, expiryBenchmark, getSandboxBenchmark, execBenchmark, filesBenchmark, fleetBenchmark];
