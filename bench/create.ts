import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey, startFloor, startLifecycleFloor } from './targets.ts';
import { cpuSeconds } from './cpu.ts';
import { call, callOk, localRuntimeOn, percentile, removeDataDir, unroundedPercentile, round, sandboxDataDir, startStack, warmPoolFull, type SandboxObject } from './stack.ts';

/** Paddock's own time over the lifecycle floor (the hops the architecture fixes), at p50. */
const OVER_FLOOR_GOAL_MS = 5;
const POOL_SIZE = 4;
const POOL_GOAL = { p50: 10, p99: 50 };
const COUNT = Number(process.env.BENCH_CREATE_COUNT ?? 50);
const WARMUP = 3;
/**
 * Creates (and destroys) through the API before any is timed: a fresh web and worker run their
 * path's code unoptimised for its first hundreds of calls, which is a process's first seconds,
 * not what a deployment serves.
 */
const API_WARMUP = Number(process.env.BENCH_CREATE_WARMUP ?? 100);

function processCpu(stack: { webPid: number; workerPid: number }): { web: number; worker: number } | undefined {
  const web = cpuSeconds(stack.webPid);
  const worker = cpuSeconds(stack.workerPid);
  return web === undefined || worker === undefined ? undefined : { web, worker };
}

export const createBenchmark: Benchmark = {
  name: 'create',
  summary: `POST /v1/sandboxes (waits until running) against the raw local runtime's create, and from a warm pool of ${POOL_SIZE}, ${COUNT} sequential each, interleaved; goals: over the lifecycle floor ≤ ${OVER_FLOOR_GOAL_MS} ms at p50 without a pool; p50 ≤ ${POOL_GOAL.p50} ms and p99 ≤ ${POOL_GOAL.p99} ms from the pool`,
  async run(ctx) {
    const stack = await startStack(ctx, 'create');
    const pooledStack = await startStack(ctx, 'create-pool', { PADDOCK_WARM_POOL_SIZE: String(POOL_SIZE), PADDOCK_REAPER_SWEEP_SECONDS: '1' });
    const db = new pg.Client({ connectionString: ctx.databaseUrl });
    await db.connect();
    // Untimed, between the pooled creates: the pool full again, as it is between creates that do not come all at once.
    const poolFull = () => warmPoolFull(db, pooledStack.deployment, POOL_SIZE, { timeoutMs: 60_000, everyMs: 5 });
    const rawDir = sandboxDataDir('create-raw');
    const runtime = localRuntimeOn(rawDir);
    // The hops the architecture fixes, with no work (bench/lifecycle-floor.ts), and a read's
    // (bench/floor-server.ts): what is left over them is Paddock's own.
    const lifecycleFloor = await startLifecycleFloor(ctx);
    const readFloor = await startFloor(ctx);
    const floorOk = async (url: string, method: string) => {
      const answer = await call(url, 'none', method, '/', method === 'POST' ? {} : undefined);
      if (answer.status >= 300) throw new Error(`the floor answered ${answer.status}`);
      return answer.ms;
    };
    try {
      const key = await mintApiKey(stack.url);
      const pooledKey = await mintApiKey(pooledStack.url);
      const api: number[] = [];
      const raw: number[] = [];
      const apiServer: number[] = [];
      const pooled: number[] = [];
      const pooledInSession: number[] = [];
      const destroyed: number[] = [];
      const rawDestroyed: number[] = [];
      const lifecycleFloorMs: number[] = [];
      const readFloorMs: number[] = [];
      // The plain stack's processes between the warm-up and the end: what a create and a destroy cost them.
      let cpuFrom: { web: number; worker: number } | undefined;
      let pooledMisses = 0;
      const claimPooled = async () => {
        const claimed = await callOk(pooledStack.url, pooledKey, 'POST', '/v1/sandboxes', {});
        const claimedSandbox = claimed.body as SandboxObject;
        if (claimedSandbox.status !== 'running') throw new Error(`pooled sandbox ${claimedSandbox.id} is ${claimedSandbox.status}`);
        // A sandbox from the pool was ready before its row existed: readyAt is its createdAt.
        if (claimedSandbox.readyAt !== claimedSandbox.createdAt) pooledMisses++;
        await callOk(pooledStack.url, pooledKey, 'DELETE', `/v1/sandboxes/${claimedSandbox.id}`);
        return claimed.ms;
      };
      for (let i = 0; i < API_WARMUP; i++) {
        const created = await callOk(stack.url, key, 'POST', '/v1/sandboxes', {});
        await callOk(stack.url, key, 'DELETE', `/v1/sandboxes/${(created.body as SandboxObject).id}`);
      }
      for (let i = 0; i < WARMUP + COUNT; i++) {
        // The create as a client's first request after a pause (here the ~0.3 s of the other
        // subjects' creates): every process on its way wakes from idle.
        await poolFull();
        const afterIdle = await claimPooled();
        // The create inside a session, right after another request of the same client (as an
        // agent creates after reading its account): the same path, awake.
        await poolFull();
        await callOk(pooledStack.url, pooledKey, 'GET', '/v1/account');
        const inSession = await claimPooled();
        // The pool's refills done before the subjects below, which would otherwise share the
        // cores with them.
        await poolFull();

        const created = await callOk(stack.url, key, 'POST', '/v1/sandboxes', {});
        const sandbox = created.body as SandboxObject;
        if (sandbox.status !== 'running') throw new Error(`sandbox ${sandbox.id} is ${sandbox.status}`);
        const destroy = await callOk(stack.url, key, 'DELETE', `/v1/sandboxes/${sandbox.id}`);
        if ((destroy.body as SandboxObject).state !== 'destroyed') throw new Error(`sandbox ${sandbox.id} is ${(destroy.body as SandboxObject).state} after its DELETE`);

        const id = `sbx_${randomBytes(10).toString('hex')}`;
        const started = performance.now();
        const state = await runtime.create({ id, accountId: 'acc_bench', capSeconds: 3600 });
        const rawMs = performance.now() - started;
        if (state.status !== 'running') throw new Error(`raw sandbox ${id} is ${state.status}`);
        const destroyStarted = performance.now();
        await runtime.destroy(id);
        const rawDestroyMs = performance.now() - destroyStarted;
        // Each floor after the pause the subjects above made it: idle, as the API's processes are before a create.
        const readFloorOnce = await floorOk(readFloor.url, 'GET');
        const lifecycleFloorOnce = await floorOk(lifecycleFloor.url, 'POST');
        if (i === WARMUP - 1) cpuFrom = processCpu(stack);
        if (i < WARMUP) continue;
        readFloorMs.push(readFloorOnce);
        lifecycleFloorMs.push(lifecycleFloorOnce);
        destroyed.push(destroy.ms);
        rawDestroyed.push(rawDestroyMs);
        pooled.push(afterIdle);
        pooledInSession.push(inSession);
        api.push(created.ms);
        raw.push(rawMs);
        apiServer.push(Date.parse(sandbox.readyAt!) - Date.parse(sandbox.createdAt));
        if ((i - WARMUP + 1) % 10 === 0) ctx.log(`  ${i - WARMUP + 1}/${COUNT}: API p50 ${percentile(api, 50)} ms, raw p50 ${percentile(raw, 50)} ms`);
      }
      const overhead = unroundedPercentile(api, 50) - unroundedPercentile(raw, 50);
      const overFloor = overhead - unroundedPercentile(lifecycleFloorMs, 50);
      // The same, round by round: each API create beside the raw create and the floor of its own
      // round, which share the host's moment. A difference of p50s from distributions some 40 ms
      // wide moved by ±3 ms from run to run; the p50 of the rounds' differences is steadier.
      const overFloorRounds = api.map((ms, i) => ms - raw[i]! - lifecycleFloorMs[i]!);
      const cpuTo = processCpu(stack);
      const cpuPerCycle = (which: 'web' | 'worker') => (cpuFrom && cpuTo ? round(((cpuTo[which] - cpuFrom[which]) * 1000) / COUNT) : NaN);
      const rows: BenchRow[] = [
        {
          subject: 'raw runtime: createLocalRuntime().create()',
          figures: { n: raw.length, 'p50 ms': percentile(raw, 50), 'p99 ms': percentile(raw, 99), 'max ms': percentile(raw, 100) },
          detail: { samples: raw.map((v) => round(v)) },
        },
        {
          subject: 'API: POST /v1/sandboxes until running',
          figures: {
            n: api.length,
            'p50 ms': percentile(api, 50),
            'p99 ms': percentile(api, 99),
            'max ms': percentile(api, 100),
            'overhead p50 ms': round(overhead),
            'over the floor p50 ms': round(overFloor),
            'over the floor, round by round, p50 ms': round(percentile(overFloorRounds, 50)),
          },
          goal: { text: `over the lifecycle floor ≤ ${OVER_FLOOR_GOAL_MS} ms at p50`, met: overFloor <= OVER_FLOOR_GOAL_MS },
          detail: { samples: api.map((v) => round(v)) },
        },
        {
          subject: "floor: the lifecycle's hops with no work (HTTP, Redis GET, one PostgreSQL round trip, a BullMQ job; in the worker one round trip and a Redis publish), after a pause",
          figures: { n: lifecycleFloorMs.length, 'p50 ms': percentile(lifecycleFloorMs, 50), 'p99 ms': percentile(lifecycleFloorMs, 99), 'max ms': percentile(lifecycleFloorMs, 100) },
          detail: { samples: lifecycleFloorMs.map((v) => round(v)) },
        },
        {
          subject: '(API: readyAt − createdAt, as stored)',
          figures: { n: apiServer.length, 'p50 ms': percentile(apiServer, 50), 'p99 ms': percentile(apiServer, 99), 'max ms': percentile(apiServer, 100) },
        },
        {
          subject: 'raw runtime: destroy()',
          figures: { n: rawDestroyed.length, 'p50 ms': percentile(rawDestroyed, 50), 'p99 ms': percentile(rawDestroyed, 99), 'max ms': percentile(rawDestroyed, 100) },
        },
        {
          subject: 'API: DELETE /v1/sandboxes/{id} until destroyed',
          figures: {
            n: destroyed.length,
            'p50 ms': percentile(destroyed, 50),
            'p99 ms': percentile(destroyed, 99),
            'max ms': percentile(destroyed, 100),
            'overhead p50 ms': round(percentile(destroyed, 50) - percentile(rawDestroyed, 50)),
          },
        },
        {
          // CPU time, not wall time: what each create and destroy costs the control plane's processes (idle ticks included).
          subject: 'CPU ms per create + destroy through the API: web, worker',
          figures: { n: COUNT, 'web ms': cpuPerCycle('web'), 'worker ms': cpuPerCycle('worker') },
        },
        {
          subject: `API: POST /v1/sandboxes from a warm pool of ${POOL_SIZE} (running in the answer), after a pause`,
          figures: {
            n: pooled.length,
            'p50 ms': percentile(pooled, 50),
            'p99 ms': percentile(pooled, 99),
            'max ms': percentile(pooled, 100),
            'over the floor p50 ms': round(percentile(pooled, 50) - percentile(readFloorMs, 50)),
            'not from the pool': pooledMisses,
          },
          goal: {
            text: `p50 ≤ ${POOL_GOAL.p50} ms, p99 ≤ ${POOL_GOAL.p99} ms`,
            met: percentile(pooled, 50) <= POOL_GOAL.p50 && percentile(pooled, 99) <= POOL_GOAL.p99 && pooledMisses === 0,
          },
          detail: { samples: pooled.map((v) => round(v)) },
        },
        {
          subject: 'floor: a read (HTTP, Redis GET, SELECT 1), after a pause',
          figures: { n: readFloorMs.length, 'p50 ms': percentile(readFloorMs, 50), 'p99 ms': percentile(readFloorMs, 99), 'max ms': percentile(readFloorMs, 100) },
          detail: { samples: readFloorMs.map((v) => round(v)) },
        },
        {
          subject: `API: the same, right after a GET /v1/account of the same client`,
          figures: { n: pooledInSession.length, 'p50 ms': percentile(pooledInSession, 50), 'p99 ms': percentile(pooledInSession, 99), 'max ms': percentile(pooledInSession, 100) },
          goal: {
            text: `p50 ≤ ${POOL_GOAL.p50} ms, p99 ≤ ${POOL_GOAL.p99} ms`,
            met: percentile(pooledInSession, 50) <= POOL_GOAL.p50 && percentile(pooledInSession, 99) <= POOL_GOAL.p99 && pooledMisses === 0,
          },
          detail: { samples: pooledInSession.map((v) => round(v)) },
        },
      ];
      return rows;
    } finally {
      await db.end();
      await runtime.close();
      await removeDataDir(rawDir);
      await stack.stop();
      await pooledStack.stop();
      await lifecycleFloor.stop();
      await readFloor.stop();
    }
  },
};
