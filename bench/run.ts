// `npm run bench`: starts PostgreSQL and Redis, migrates, runs the benchmarks registered in
// bench/index.ts (or only those named: `npm run bench -- account`), prints their figures and
// writes them to .paddock/bench/results.json. See docs/benchmarks.md.
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { startServices } from '../scripts/services.ts';
import { migrateDatabase } from '../migrations/migrate.ts';
import { benchmarks } from './index.ts';
import { loadSettingsFromEnv } from './load.ts';
import { describeMachine } from './machine.ts';
import { killAll } from './processes.ts';
import { machineLine, summary, writeResults, type BenchResults } from './report.ts';
import type { BenchContext } from './types.ts';

const root = resolve(import.meta.dirname, '..');
const dir = resolve(root, '.paddock/bench');
const log = (line: string) => process.stderr.write(`${line}\n`);

const names = process.argv.slice(2);
const unknown = names.filter((n) => !benchmarks.some((b) => b.name === n));
if (unknown.length > 0) {
  log(`unknown benchmark ${unknown.join(', ')}; known: ${benchmarks.map((b) => b.name).join(', ')}`);
  process.exit(2);
}
const selected = names.length ? benchmarks.filter((b) => names.includes(b.name)) : benchmarks;

mkdirSync(dir, { recursive: true });
const services = await startServices({ dir, database: 'paddock_bench', fresh: true, log });
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  killAll();
  await services.stop();
};
// A run that dies (an unhandled rejection in a benchmark) still takes the processes it started
// with it: a worker left behind would go on retrying a Redis that is gone.
process.on('exit', killAll);
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.on(signal, () => void stop().then(() => process.exit(code)));
}

let exitCode = 0;
try {
  await migrateDatabase(services.databaseUrl);

  const warnings: string[] = [];
  const ctx: BenchContext = {
    databaseUrl: services.databaseUrl,
    redisUrl: services.redisUrl,
    dir,
    load: loadSettingsFromEnv(),
    profile: process.env.BENCH_PROFILE === '1',
    log,
    warn: (line) => {
      warnings.push(line);
      log(`\n!!! WARNING: ${line}\n`);
    },
  };
  const results: BenchResults = {
    date: new Date().toISOString(),
    machine: await describeMachine(services.databaseUrl, services.redisUrl),
    load: ctx.load,
    loadAverage: { start: loadavg()[0]! },
    benchmarks: [],
    warnings,
  };
  log(`machine: ${machineLine(results.machine)}`);
  if (results.loadAverage.start > results.machine.cores) {
    log(`note: load average ${results.loadAverage.start.toFixed(1)} on ${results.machine.cores} cores: other work competes, figures will be noisy`);
  }
  const { connections, seconds, warmupSeconds, rounds } = ctx.load;
  log(`load: autocannon, ${connections} connections, ${warmupSeconds} s warm-up + ${seconds} s measured, ${rounds} rounds`);

  for (const benchmark of selected) {
    log(`\n=== ${benchmark.name}: ${benchmark.summary}`);
    results.benchmarks.push({ name: benchmark.name, summary: benchmark.summary, rows: await benchmark.run(ctx) });
  }

  results.loadAverage.end = loadavg()[0]!;
  process.stdout.write(summary(results));
  const file = join(dir, 'results.json');
  writeResults(file, results);
  log(`\nresults written to ${file}`);
  if (warnings.length > 0) {
    log(`\n${'!'.repeat(72)}\n!!! ${warnings.length} WARNING(S): some figures are not comparable`);
    for (const w of warnings) log(`!!! ${w}`);
    log('!'.repeat(72));
    exitCode = 1;
  }
} catch (err) {
  log(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  exitCode = 1;
} finally {
  await stop();
}
process.exit(exitCode);
