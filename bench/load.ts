import autocannon, { type Result } from 'autocannon';
import { cpuSeconds } from './cpu.ts';

export interface LoadSettings {
  connections: number;
  /** Seconds measured, after the warm-up. */
  seconds: number;
  /** Seconds of load thrown away first: JIT, pool connections, caches. */
  warmupSeconds: number;
  /** Passes over the targets; alternating them spreads drift (thermal, noisy neighbours) evenly. */
  rounds: number;
}

export function loadSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): LoadSettings {
  return {
    connections: positive(env.BENCH_CONNECTIONS, 50),
    seconds: positive(env.BENCH_SECONDS, 10),
    // After 2 s the JIT compiler thread still took ~10% of Paddock's CPU; after 5 s it has settled.
    warmupSeconds: positive(env.BENCH_WARMUP_SECONDS, 5),
    rounds: positive(env.BENCH_ROUNDS, 2),
  };
}

function positive(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value && Number.isFinite(n) && n > 0 ? n : fallback;
}

export interface Target {
  url: string;
  headers?: Record<string, string>;
  /** The server process, to measure its CPU time per request. */
  pid?: number;
}

export interface LoadFigures {
  /** Mean of the per-second samples. */
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  /** The server process's CPU time per request, in microseconds (Linux only). */
  cpuUsPerRequest?: number;
  completed: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
}

/** Warms the target up, then measures it under constant concurrency (closed loop). */
export async function measure(target: Target, settings: LoadSettings): Promise<LoadFigures> {
  const options = { url: target.url, headers: target.headers ?? {}, connections: settings.connections };
  await autocannon({ ...options, duration: settings.warmupSeconds });
  const cpuBefore = target.pid ? cpuSeconds(target.pid) : undefined;
  const result = await autocannon({ ...options, duration: settings.seconds });
  const cpuAfter = target.pid ? cpuSeconds(target.pid) : undefined;
  const cpu = cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined;
  return figures(result, cpu);
}

function figures(result: Result, cpu: number | undefined): LoadFigures {
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    meanMs: result.latency.average,
    ...(cpu !== undefined && result.requests.total > 0 ? { cpuUsPerRequest: (cpu / result.requests.total) * 1e6 } : {}),
    completed: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count])),
  };
}

/** Averages rounds of the same target; counts of failures are summed, never averaged away. */
export function combine(rounds: LoadFigures[]): LoadFigures {
  const mean = (pick: (f: LoadFigures) => number) => rounds.reduce((sum, f) => sum + pick(f), 0) / rounds.length;
  const sum = (pick: (f: LoadFigures) => number) => rounds.reduce((total, f) => total + pick(f), 0);
  const statusCodes: Record<string, number> = {};
  for (const round of rounds) {
    for (const [code, count] of Object.entries(round.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + count;
  }
  return {
    requestsPerSecond: mean((f) => f.requestsPerSecond),
    p50Ms: mean((f) => f.p50Ms),
    p99Ms: mean((f) => f.p99Ms),
    meanMs: mean((f) => f.meanMs),
    ...(rounds.every((f) => f.cpuUsPerRequest !== undefined) ? { cpuUsPerRequest: mean((f) => f.cpuUsPerRequest!) } : {}),
    completed: sum((f) => f.completed),
    non2xx: sum((f) => f.non2xx),
    errors: sum((f) => f.errors),
    timeouts: sum((f) => f.timeouts),
    statusCodes,
  };
}
