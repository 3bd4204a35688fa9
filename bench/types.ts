import type { LoadSettings } from './load.ts';

/** What the harness hands every benchmark: the stack it started and where to put its files. */
export interface BenchContext {
  databaseUrl: string;
  redisUrl: string;
  /** Folder for this run's logs and profiles (`.paddock/bench`). */
  dir: string;
  load: LoadSettings;
  /** Starts the processes under test with `--cpu-prof` (BENCH_PROFILE=1). */
  profile: boolean;
  log(line: string): void;
  /** Something that makes the figures suspect (errors, non-2xx answers): repeated at the end. */
  warn(line: string): void;
}

/** One line of the results table: what was measured and its figures, by column. */
export interface BenchRow {
  /** Rows with a table name are printed as a table of their own, under that name. */
  table?: string;
  subject: string;
  figures: Record<string, number | string>;
  /** The speed goal this row is held to, when it has one. */
  goal?: { text: string; met: boolean };
  /** Raw figures (per round, status codes…) for results.json only. */
  detail?: unknown;
}

/**
 * A benchmark under bench/, registered in bench/index.ts. Each one brings up what it measures
 * and tears it down before returning, so they can run in any order or alone.
 */
export interface Benchmark {
  name: string;
  summary: string;
  run(ctx: BenchContext): Promise<BenchRow[]>;
}
