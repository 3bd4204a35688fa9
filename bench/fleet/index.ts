import { cpus } from 'node:os';
import pg from 'pg';
import { configSchema } from '../../shared/config.ts';
import { cpuSeconds } from '../cpu.ts';
import { inBatches, localRuntimeOn, startStack, warmPoolFull } from '../stack.ts';
import { signUp } from '../targets.ts';
import type { Benchmark, BenchRow } from '../types.ts';
import { runAgent, type AgentAccount, type Fleet, type Sample } from './agent.ts';
import { completedSessions, runOpenLoop } from './open-loop.ts';
import { census, jobMeans, serverRefusals, settle, type Census } from './afterwards.ts';
import { machineBusySeconds } from './machine-cpu.ts';
import { errorRows, familyOf, refusalRows, trafficRows } from './tally.ts';
import { startWatcher } from './watcher.ts';

// `npm run bench:load`: a fleet of accounts (200) working for a minute, each at its own rate
// limits and quotas (the product's defaults), through two `web` and two `worker` processes on one
// PostgreSQL and one Redis, with real bubblewrap sandboxes. Afterwards the database, the runtime
// and the workers' metrics must agree on what is left.

const ACCOUNTS = Number(process.env.BENCH_LOAD_ACCOUNTS ?? 200);
const SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 60);
/**
 * Each agent's mean think time before a request, ms. 0, the default: a closed loop, each request
 * sent as soon as the last is answered, so the fleet offers whatever the machine serves and a
 * request's time is the agents over the throughput (Little's law). With a think time the fleet
 * offers about agents / think time requests a second, as that many users at their own pace do.
 */
const THINK_MS = Number(process.env.BENCH_LOAD_THINK_MS ?? 0);
/**
 * BENCH_LOAD_OPEN=0.8: an open loop at that fraction of the machine's own pace. A first window, a
 * closed loop, finds the sessions (create, work, destroy) a second the mix completes at
 * saturation; the measured window then offers that fraction of it on a schedule (open-loop.ts).
 */
const OPEN_FRACTION = Number(process.env.BENCH_LOAD_OPEN ?? 0);
/** The stack's `web` and `worker` processes (the scale-out study runs 1, 2 and 4 of each). */
const WEBS = Number(process.env.BENCH_LOAD_WEBS ?? 2);
const WORKERS = Number(process.env.BENCH_LOAD_WORKERS ?? 2);
const REQUEST_TIMEOUT_MS = 120_000;
const SETTLE_TIMEOUT_MS = 120_000;
/** Busy loops in sandboxes beside the fleet (one sandbox each): by default one per core. */
const SPINNERS = Number(process.env.BENCH_LOAD_SPINNERS ?? cpus().length);
/**
 * Pre-started sandboxes (PADDOCK_WARM_POOL_SIZE) the stack keeps: the window starts once the pool
 * is full, and the report counts the creates it answered. 0, the product's default: none.
 */
const WARM_POOL = Number(process.env.BENCH_LOAD_WARM_POOL ?? 0);
const POOL_FILL_TIMEOUT_MS = 600_000;
/**
 * The sandboxes' claim on the CPU (PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT): `BENCH_LOAD_SANDBOX_WEIGHT=equal`
 * gives them the weight of any process group (100), the "before" of the responsiveness goal.
 */
const CPU_CLAIM =
  process.env.BENCH_LOAD_SANDBOX_WEIGHT === 'equal' ? '100' : (process.env.PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT ?? String(configSchema.shape.PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT.parse(undefined)));

/** The limits the fleet works under: the product's defaults unless the environment sets them. */
const LIMIT_VARIABLES = [
  'PADDOCK_RATE_SANDBOX_OPS_PER_MIN',
  'PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN',
  'PADDOCK_QUOTA_CONCURRENT_SANDBOXES',
  'PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS',
] as const;

function limits(): Record<string, string> {
  return Object.fromEntries(LIMIT_VARIABLES.map((name) => [name, process.env[name] ?? String(configSchema.shape[name].parse(undefined))]));
}

export const fleetBenchmark: Benchmark = {
  name: 'load',
  summary: `${ACCOUNTS} accounts for ${SECONDS} s creating, executing, editing files and destroying at their rate limits, through ${WEBS} webs and ${WORKERS} workers; goals: 0 5xx, and afterwards the database, the runtime and the metrics agree`,
  async run(ctx) {
    const fleetLimits = limits();
    ctx.log(`  limits: ${Object.entries(fleetLimits).map(([k, v]) => `${k}=${v}`).join(', ')}`);
    // The signups all come from this one address: the per-IP auth bucket (10 a minute) is raised
    // for them; everything after them runs under the limits above.
    const claim = { PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT: CPU_CLAIM };
    const pool = WARM_POOL > 0 ? { PADDOCK_WARM_POOL_SIZE: String(WARM_POOL) } : {};
    const stack = await startStack(ctx, 'load', { ...fleetLimits, ...claim, ...pool, PADDOCK_RATE_AUTH_PER_MIN: '100000' }, { webs: WEBS, workers: WORKERS });
    const db = new pg.Pool({ connectionString: ctx.databaseUrl, max: 2 });
    const runtime = localRuntimeOn(stack.dataDir, claim);
    try {
      const signedUp = await inBatches(Array.from({ length: ACCOUNTS }), 8, (_, i) => signUp(stack.urls[i % stack.urls.length]!));
      const accounts: AgentAccount[] = signedUp.map((a) => ({ id: a.accountId, key: a.key }));
      const accountIds = accounts.map((a) => a.id);
      ctx.log(`  ${accounts.length} accounts signed up, each with an API key`);
      if (WARM_POOL > 0) {
        const t0 = Date.now();
        await warmPoolFull(db, stack.deployment, WARM_POOL, { timeoutMs: POOL_FILL_TIMEOUT_MS, everyMs: 500 });
        ctx.log(`  a warm pool of ${WARM_POOL} filled (${((Date.now() - t0) / 1000).toFixed(0)} s after the signups)`);
      }

      // The open loop's pace: the sessions a second a closed loop completes, in a window of its own.
      let offeredPerSecond: number | undefined;
      if (OPEN_FRACTION > 0) {
        const calibration: Sample[] = [];
        const stopCalibration = new AbortController();
        const timer = setTimeout(() => stopCalibration.abort(), SECONDS * 1000);
        const t0 = Date.now();
        const calibrating = fleetOf(stack.urls, stopCalibration, calibration, []);
        await Promise.all(accounts.map((a) => runAgent(calibrating, a)));
        clearTimeout(timer);
        const inWindow = calibration.filter((x) => x.startedAt < t0 + SECONDS * 1000);
        const saturation = completedSessions(inWindow) / SECONDS;
        offeredPerSecond = saturation * OPEN_FRACTION;
        ctx.log(`  closed loop: ${saturation.toFixed(2)} sessions/s completed (${(inWindow.length / SECONDS).toFixed(0)} req/s); the open loop offers ${offeredPerSecond.toFixed(2)}/s`);
        await destroyLeftovers(db, stack.urls[0]!, accounts);
        await settle(db, accountIds, SETTLE_TIMEOUT_MS);
      }

      const watcher = SPINNERS > 0 ? await startWatcher(stack.urls, SPINNERS, SECONDS, CPU_CLAIM === 'idle' ? 'an idle CPU group' : `${CPU_CLAIM}% of a process group's CPU weight`) : undefined;
      if (watcher) ctx.log(`  ${SPINNERS} busy loops in sandboxes, and a reader of GET /v1/sandboxes/{id} beside the fleet`);
      const refusalsBefore = await serverRefusals(stack.urls);
      const pids = { web: stack.webPids, worker: stack.workerPids };
      const cpuBefore = processCpu(pids);
      const busyBefore = machineBusySeconds();
      const clientBefore = process.cpuUsage();

      const samples: Sample[] = [];
      const wrong: string[] = [];
      let pooledCreates = 0;
      const stop = new AbortController();
      const startedAt = Date.now();
      const fleet: Fleet = { ...fleetOf(stack.urls, stop, samples, wrong), pooled: () => pooledCreates++ };
      const progress = setInterval(() => {
        const s = (Date.now() - startedAt) / 1000;
        const errors = samples.filter((x) => x.status >= 500 || x.status === 0).length;
        ctx.log(`  ${s.toFixed(0)} s: ${samples.length} requests (${(samples.length / s).toFixed(0)}/s), ${errors} 5xx or unanswered, ${wrong.length} wrong`);
      }, 10_000);
      const timer = setTimeout(() => stop.abort(), SECONDS * 1000);
      const places = Number(fleetLimits.PADDOCK_QUOTA_CONCURRENT_SANDBOXES);
      const open = offeredPerSecond === undefined ? undefined : await runOpenLoop(fleet, accounts, offeredPerSecond, SECONDS, places);
      if (!open) await Promise.all(accounts.map((a) => runAgent(fleet, a)));
      clearTimeout(timer);
      if (open) ctx.log(`  open loop: ${open.offered} sessions offered, ${open.started} started, ${open.noPlace} found no account with a place`);
      clearInterval(progress);
      const drainedMs = Date.now() - startedAt - SECONDS * 1000;
      const windowOnly = samples.filter((s) => s.startedAt < startedAt + SECONDS * 1000);
      const window = {
        startedAt,
        agents: accounts.length,
        requests: windowOnly.length,
        seconds: SECONDS,
        thinkMs: THINK_MS,
        ...(open && offeredPerSecond !== undefined ? { open: { ...open, perSecond: offeredPerSecond, fraction: OPEN_FRACTION } } : {}),
      };
      const responsiveness = (await watcher?.finish(windowOnly.filter((s) => familyOf(s.route) === 'sandbox lifecycle'), window)) ?? [];

      const cpuAfter = processCpu(pids);
      const busy = machineBusySeconds() - busyBefore;
      const client = process.cpuUsage(clientBefore);
      const windowSamples = windowOnly;

      const settled = await settle(db, accountIds, SETTLE_TIMEOUT_MS);
      const left = await census(db, runtime, accountIds, stack.workerMetricsUrls[0]!);
      const refusalsAfter = await serverRefusals(stack.urls);
      const serverSide = Object.fromEntries(Object.entries(refusalsAfter.refusals).map(([k, v]) => [k, v - (refusalsBefore.refusals[k] ?? 0)]));
      const latency = await jobMeans(stack.workerMetricsUrls, 'paddock_job_latency_seconds');
      const duration = await jobMeans(stack.workerMetricsUrls, 'paddock_job_duration_seconds');

      // The leftovers destroyed through the API, as their owners would: then nothing may remain.
      await destroyLeftovers(db, stack.urls[0]!, accounts);
      await settle(db, accountIds, SETTLE_TIMEOUT_MS);
      const cleared = await census(db, runtime, accountIds, stack.workerMetricsUrls[0]!);

      const rows: BenchRow[] = [
        ...responsiveness,
        ...trafficRows(windowSamples, SECONDS),
        ...refusalRows(windowSamples, serverSide),
        ...errorRows(samples),
        ...censusRows(left, cleared, settled),
        ...cpuRows(pids, cpuBefore, cpuAfter, busy, client),
        ...jobRows(latency, duration),
        {
          table: 'the run',
          subject: 'fleet',
          figures: {
            accounts: ACCOUNTS,
            'window s': SECONDS,
            'think time ms': THINK_MS,
            'open loop, of saturation': OPEN_FRACTION,
            webs: WEBS,
            workers: WORKERS,
            'last answer after window, ms': drainedMs,
            'wrong answers': wrong.length,
            'warm pool size': WARM_POOL,
            'creates answered from the pool': pooledCreates,
            '5xx in the webs\' /metrics': refusalsAfter.server5xx - refusalsBefore.server5xx,
            ...Object.fromEntries(Object.entries(fleetLimits).map(([k, v]) => [k.replace('PADDOCK_', '').toLowerCase(), Number(v)])),
          },
          goal: { text: 'no wrong answer', met: wrong.length === 0 },
          detail: { wrong: wrong.slice(0, 50), samples: samples.length, serverSide },
        },
      ];

      const fivexx = windowSamples.filter((s) => s.status >= 500).length;
      if (fivexx > 0) ctx.warn(`load: ${fivexx} answers were 5xx`);
      const unanswered = samples.filter((s) => s.status === 0).length;
      if (unanswered > 0) ctx.warn(`load: ${unanswered} requests got no answer`);
      if (wrong.length > 0) ctx.warn(`load: ${wrong.length} wrong answers, first: ${wrong[0]}`);
      if (!settled) ctx.warn('load: sandboxes still pending or terminating two minutes after the window');
      for (const [when, c] of [['after the window', left], ['after the leftovers were destroyed', cleared]] as const) {
        if (c.orphans.length || c.missing.length) ctx.warn(`load: ${when}: ${c.orphans.length} orphans in the runtime, ${c.missing.length} running sandboxes missing from it`);
        if (c.activeGauge !== c.activeInDb) ctx.warn(`load: ${when}: the workers' gauge says ${c.activeGauge} active, the database ${c.activeInDb}`);
      }
      if (cleared.activeInDb !== 0 || cleared.inRuntime !== 0) ctx.warn(`load: ${cleared.activeInDb} active in the database and ${cleared.inRuntime} in the runtime after destroying all`);
      return rows;
    } finally {
      await runtime.close();
      await db.end();
      await stack.stop();
    }
  },
};

/** A fleet whose window ends with `stop`, recording into `samples` and `wrong`. */
function fleetOf(urls: string[], stop: AbortController, samples: Sample[], wrong: string[]): Fleet {
  return {
    urls,
    stopped: () => stop.signal.aborted,
    stopSignal: stop.signal,
    record: (s) => samples.push(s),
    wrong: (what) => wrong.push(what),
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    pooled: () => undefined,
    thinkMs: THINK_MS,
  };
}

function processCpu(pids: Record<string, number[]>): Record<string, number[]> {
  return Object.fromEntries(Object.entries(pids).map(([role, list]) => [role, list.map((pid) => cpuSeconds(pid) ?? NaN)]));
}

function censusRows(left: Census, cleared: Census, settled: boolean): BenchRow[] {
  const table = 'afterwards: database, runtime and metrics';
  const row = (subject: string, c: Census, extra: Record<string, string | number> = {}): BenchRow => ({
    table,
    subject,
    figures: {
      'active in database': c.activeInDb,
      running: c.activeByStatus.running ?? 0,
      'pending or terminating': (c.activeByStatus.pending ?? 0) + (c.activeByStatus.terminating ?? 0),
      'in runtime': c.inRuntime,
      'warm pool': c.pooled,
      'workers\' gauge': c.activeGauge,
      orphans: c.orphans.length,
      missing: c.missing.length,
      ...extra,
    },
    goal: {
      text: 'runtime = database = gauge, no orphan',
      met: c.orphans.length === 0 && c.missing.length === 0 && c.inRuntime === c.activeInDb && c.activeGauge === c.activeInDb,
    },
    detail: { orphans: c.orphans, missing: c.missing },
  });
  return [row(`once settled (${settled ? 'settled' : 'NOT settled in 2 min'})`, left), row('after DELETE of every leftover', cleared)];
}

function cpuRows(pids: Record<string, number[]>, before: Record<string, number[]>, after: Record<string, number[]>, machineBusy: number, client: NodeJS.CpuUsage): BenchRow[] {
  const table = `CPU over the window and its drain (${cpus().length} cores)`;
  const rows: BenchRow[] = [];
  let accounted = 0;
  for (const role of Object.keys(pids)) {
    pids[role]!.forEach((_, i) => {
      const used = after[role]![i]! - before[role]![i]!;
      accounted += used;
      rows.push({ table, subject: `${role} ${i}`, figures: { 'CPU s': Math.round(used * 10) / 10 } });
    });
  }
  const clientSeconds = (client.user + client.system) / 1e6;
  accounted += clientSeconds;
  rows.push({ table, subject: 'the fleet (bench process)', figures: { 'CPU s': Math.round(clientSeconds * 10) / 10 } });
  rows.push({ table, subject: 'everything else (sandboxes, PostgreSQL, Redis, bwrap, nsenter)', figures: { 'CPU s': Math.round((machineBusy - accounted) * 10) / 10 } });
  rows.push({ table, subject: 'machine, busy', figures: { 'CPU s': Math.round(machineBusy * 10) / 10 } });
  return rows;
}

function jobRows(latency: Record<string, { count: number; meanMs: number }>, duration: Record<string, { count: number; meanMs: number }>): BenchRow[] {
  const table = 'jobs, from the workers\' /metrics (whole run)';
  return Object.keys({ ...latency, ...duration })
    .sort()
    .map((job) => ({
      table,
      subject: job,
      figures: { jobs: duration[job]?.count ?? 0, 'mean wait ms': latency[job]?.meanMs ?? 0, 'mean run ms': duration[job]?.meanMs ?? 0 },
    }));
}

/** DELETE (waiting) every sandbox the fleet left active, through the API, waiting out 429s. */
async function destroyLeftovers(db: pg.Pool, url: string, accounts: AgentAccount[]): Promise<void> {
  const keyOf = new Map(accounts.map((a) => [a.id, a.key]));
  const { rows } = await db.query<{ id: string; account_id: string }>("select id, account_id from sandboxes where state = 'active' and account_id = any($1)", [[...keyOf.keys()]]);
  await inBatches(rows, 20, async (row) => {
    for (;;) {
      const res = await fetch(`${url}/v1/sandboxes/${row.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${keyOf.get(row.account_id)}` } });
      await res.text();
      if (res.status !== 429) return;
      await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after') ?? 1) * 1000));
    }
  });
}
