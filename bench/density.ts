import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { call, callOk, inBatches, percentile, unroundedPercentile, round, startStack, type SandboxObject } from './stack.ts';

// Density (docs/benchmarks.md): one account fills this host with local sandboxes through the API,
// to BASE live and then to COUNT live; at each level the last creates and a round of execs are
// timed one after another, so that what grows with the number of live sandboxes (a scan of loop
// devices, mounts, cgroups, processes, or a query) shows as the ratio of the two levels. Then every
// sandbox is destroyed at once, each DELETE its own request (a 429 for the account's connections
// retried after a second, as the SDKs do), and the host is searched for what any of them left behind.

const COUNT = Number(process.env.BENCH_DENSITY_COUNT ?? 1000);
const BASE = Math.min(50, COUNT);
/** The timed creates and execs at each level. */
const SAMPLE = 20;
/** Untimed creates at once while filling up to a level. */
const FILL_AT_ONCE = 4;
const CREATE_GOAL = 1.3;
const EXEC_GOAL = 1.2;
const MEMORY_GOAL_MB = 2;
const DESTROY_GOAL_S = 30;

/** Bytes the host has in use (MemTotal less MemAvailable). */
function hostMemoryUsed(): number {
  const info = readFileSync('/proc/meminfo', 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(info)?.[1] ?? 0);
  return (kb('MemTotal') - kb('MemAvailable')) * 1024;
}

interface Level {
  live: number;
  createMs: number[];
  execMs: number[];
  memoryBytes: number;
}

/** What the sandboxes of `ids` left on this host: loop devices, mounts, cgroups, processes. */
function leftBehind(dataDir: string, ids: Set<string>): Record<string, number> {
  const loops = execFileSync('losetup', ['--list', '--noheadings', '--output', 'BACK-FILE'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(dataDir)).length;
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.includes(dataDir)).length;
  let cgroups = 0;
  const roots = ['/sys/fs/cgroup/paddock', ...(existsSync('/sys/fs/cgroup') ? readdirSync('/sys/fs/cgroup').map((c) => join('/sys/fs/cgroup', c, 'paddock')) : [])];
  for (const root of new Set(roots)) {
    if (!existsSync(root)) continue;
    cgroups += readdirSync(root).filter((name) => ids.has(name)).length;
  }
  let processes = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const marker = /paddock-sandbox-(sbx_[0-9a-z]+)/.exec(cmdline)?.[1];
    if (marker && ids.has(marker)) processes++;
  }
  return { loops, mounts, cgroups, processes };
}

export const densityBenchmark: Benchmark = {
  name: 'density',
  summary:
    `${COUNT} live local sandboxes of one account: create and exec p50 at ${COUNT} live against ${BASE} live (goals ≤ ${CREATE_GOAL}× and ≤ ${EXEC_GOAL}×), ` +
    `host memory a sandbox (goal ≤ ${MEMORY_GOAL_MB} MB), all destroyed at once (goal ≤ ${DESTROY_GOAL_S} s, every request answered), nothing left behind`,
  async run(ctx) {
    const stack = await startStack(ctx, 'density', { PADDOCK_WARM_POOL_SIZE: '0' });
    const sandboxes: SandboxObject[] = [];
    try {
      const key = await mintApiKey(stack.url);
      const create = async () => {
        const answer = await callOk(stack.url, key, 'POST', '/v1/sandboxes', {});
        const sandbox = answer.body as SandboxObject;
        if (sandbox.status !== 'running') throw new Error(`sandbox ${sandbox.id} is ${sandbox.status}`);
        sandboxes.push(sandbox);
        return answer.ms;
      };
      const memoryBefore = hostMemoryUsed();
      const levels: Level[] = [];
      for (const live of [...new Set([BASE, COUNT])]) {
        const fill = Math.max(0, live - SAMPLE - sandboxes.length);
        await inBatches(Array.from({ length: fill }, (_, i) => i), FILL_AT_ONCE, async () => create());
        const createMs: number[] = [];
        while (sandboxes.length < live) createMs.push(await create());
        const execMs: number[] = [];
        for (let i = 0; i < SAMPLE; i++) {
          const target = sandboxes[sandboxes.length - 1 - ((i * 37) % sandboxes.length)]!;
          const answer = await callOk(stack.url, key, 'POST', `/v1/sandboxes/${target.id}/exec`, { command: ['true'] });
          if ((answer.body as { exitCode: number }).exitCode !== 0) throw new Error(`exec answered ${JSON.stringify(answer.body)}`);
          execMs.push(answer.ms);
        }
        levels.push({ live, createMs, execMs, memoryBytes: hostMemoryUsed() - memoryBefore });
        ctx.log(`  ${live} live: create p50 ${round(percentile(createMs, 50))} ms, exec p50 ${round(percentile(execMs, 50))} ms, host memory +${Math.round((hostMemoryUsed() - memoryBefore) / 1e6)} MB`);
      }

      // Every one at once, each its own DELETE (waiting until destroyed), retried as a client
      // would when the account's connections are all in use (429, after a second).
      const ids = new Set(sandboxes.map((s) => s.id));
      let refusedForNow = 0;
      const destroy = async (id: string): Promise<number | string> => {
        for (;;) {
          const status = await call(stack.url, key, 'DELETE', `/v1/sandboxes/${id}`).then((a) => a.status, (err: unknown) => `${(err as Error).message}`);
          if (status !== 429) return status;
          refusedForNow++;
          await new Promise((r) => setTimeout(r, 1000));
        }
      };
      const started = performance.now();
      const answers = await Promise.all(sandboxes.map((s) => destroy(s.id)));
      const destroySeconds = (performance.now() - started) / 1000;
      const unanswered = answers.filter((a) => a !== 200).length;
      if (unanswered > 0) ctx.warn(`density: ${unanswered} of ${answers.length} DELETEs were not answered 200 (${[...new Set(answers.filter((a) => a !== 200))].slice(0, 5).join(', ')})`);
      sandboxes.length = 0;
      // The runtime's last removals (a disk's file, a cgroup) may trail the answer by a moment.
      await new Promise((r) => setTimeout(r, 2000));
      const left = leftBehind(stack.dataDir, ids);
      const leftCount = Object.values(left).reduce((a, b) => a + b, 0);
      ctx.log(`  all ${ids.size} destroyed at once in ${round(destroySeconds, 1)} s (${refusedForNow} 429s retried); left behind: ${JSON.stringify(left)}`);

      const [base, full] = [levels[0]!, levels[levels.length - 1]!];
      const createRatio = unroundedPercentile(full.createMs, 50) / unroundedPercentile(base.createMs, 50);
      const execRatio = unroundedPercentile(full.execMs, 50) / unroundedPercentile(base.execMs, 50);
      const perSandboxMb = full.memoryBytes / full.live / 1e6;
      const rows: BenchRow[] = levels.map((l) => ({
        subject: `${l.live} live: the last ${SAMPLE} creates (POST /v1/sandboxes, until running) and ${SAMPLE} execs of \`true\`, one after another`,
        figures: {
          'create p50 ms': round(percentile(l.createMs, 50)),
          'create p99 ms': round(percentile(l.createMs, 99)),
          'exec p50 ms': round(percentile(l.execMs, 50)),
          'host memory MB': Math.round(l.memoryBytes / 1e6),
        },
        detail: { createMs: l.createMs.map((ms) => round(ms)), execMs: l.execMs.map((ms) => round(ms)) },
      }));
      rows.push(
        {
          subject: `create p50 at ${full.live} live against ${base.live}`,
          figures: { ratio: `×${round(createRatio, 2)}` },
          goal: { text: `≤ ${CREATE_GOAL}×`, met: createRatio <= CREATE_GOAL },
        },
        {
          subject: `exec p50 at ${full.live} live against ${base.live}`,
          figures: { ratio: `×${round(execRatio, 2)}` },
          goal: { text: `≤ ${EXEC_GOAL}×`, met: execRatio <= EXEC_GOAL },
        },
        {
          subject: `host memory a sandbox at ${full.live} live`,
          figures: { 'MB a sandbox': round(perSandboxMb, 2) },
          goal: { text: `≤ ${MEMORY_GOAL_MB} MB`, met: perSandboxMb <= MEMORY_GOAL_MB },
        },
        {
          subject: `all ${ids.size} destroyed at once, a DELETE each; then what is left on the host (loop devices, mounts, cgroups, processes)`,
          figures: { seconds: round(destroySeconds, 1), '429s retried': refusedForNow, 'not answered 200': unanswered, 'left behind': leftCount },
          goal: { text: `≤ ${DESTROY_GOAL_S} s, every one answered, nothing left`, met: destroySeconds <= DESTROY_GOAL_S && unanswered === 0 && leftCount === 0 },
          detail: left,
        },
      );
      return rows;
    } finally {
      await stack.stop();
    }
  },
};
