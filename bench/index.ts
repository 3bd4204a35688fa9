import type { Benchmark } from './types.ts';
import { abuseBenchmark } from './abuse.ts';
import { accountBenchmark } from './account.ts';
import { archivesBenchmark } from './archives.ts';
import { bulkFairnessBenchmark } from './bulk-fairness.ts';
import { burstBenchmark } from './burst.ts';
import { createBenchmark } from './create.ts';
import { execBenchmark } from './exec.ts';
import { expiryBenchmark } from './expiry.ts';
import { eventsBenchmark } from './events.ts';
import { filesBenchmark } from './files.ts';
import { egressBenchmark } from './egress.ts';
import { brokeredBenchmark } from './brokered.ts';
import { fleetBenchmark } from './fleet/index.ts';
import { getSandboxBenchmark } from './get-sandbox.ts';
import { historyBenchmark } from './history.ts';
import { isolationBenchmark } from './isolation.ts';
import { maskingBenchmark } from './masking.ts';
import { refusalsBenchmark } from './refusals.ts';
import { sdkPythonBenchmark } from './sdk-python.ts';
import { sdkTsBenchmark } from './sdk-ts.ts';
import { previewsBenchmark } from './previews.ts';
import { snapshotsBenchmark } from './snapshots.ts';
import { densityBenchmark } from './density.ts';
import { terminalBenchmark } from './terminal.ts';
import { webhookFairnessBenchmark } from './webhook-fairness.ts';

/** Every benchmark, in the order `npm run bench` runs them; add new ones here. */
export const benchmarks: Benchmark[] = [accountBenchmark, createBenchmark, expiryBenchmark, eventsBenchmark, webhookFairnessBenchmark, getSandboxBenchmark, execBenchmark, terminalBenchmark, previewsBenchmark, egressBenchmark, brokeredBenchmark, filesBenchmark, maskingBenchmark, archivesBenchmark, snapshotsBenchmark, bulkFairnessBenchmark, historyBenchmark, isolationBenchmark, abuseBenchmark, burstBenchmark, refusalsBenchmark, sdkPythonBenchmark, sdkTsBenchmark, fleetBenchmark, densityBenchmark];
