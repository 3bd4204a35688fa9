import { startAttacker, type ReadyAttacker } from './attacker-process.ts';
import { resolve as resolve_ } from 'node:path';
import { ISOLATION_ATTACKS } from './isolation-attacks.ts';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { paddockProcesses, rssOf } from './paddock-processes.ts';
import { call, createRunningSandbox, percentile, round, startStack } from './stack.ts';

// One tenant attacks, another works beside it: the neighbour's exec of `echo` and GET
// of its sandbox, back to back, on a quiet machine and while the attacker floods output, spins
// every core it may and writes to disk; the RSS of every Paddock process (web, worker, the web's
// command spawner) through it all. Same run, same stack, phase after phase.

const PHASE_SECONDS = Number(process.env.BENCH_ISOLATION_SECONDS ?? 10);
const GOAL_P99_RATIO = 2;
const GOAL_GROWTH_MB = 64;
/** BENCH_ISOLATION_ONLY=text runs the quiet phases and the attacks whose name holds the text. */
const ONLY = process.env.BENCH_ISOLATION_ONLY;

const ATTACKS: { name: string; loops: number }[] = [
  { name: 'quiet', loops: 0 },
  ...ISOLATION_ATTACKS.filter((attack) => !ONLY || attack.name.includes(ONLY)),
  { name: 'quiet again', loops: 0 },
];

/**
 * Starts one attack's process (bench/isolation-attacker.ts), ready to go, as a tenant on another
 * machine would attack: the attacker's reading of its answers (a flood's is 6 MiB of JSON) must not
 * hold up the neighbour's client, which is this process.
 */
function attackerReady(name: string, milliseconds: number, world: { url: string; key: string; sandboxId: string }): Promise<ReadyAttacker> {
  return startAttacker(resolve_(import.meta.dirname, 'isolation-attacker.ts'), [name, String(milliseconds), JSON.stringify(world)]);
}

export const isolationBenchmark: Benchmark = {
  name: 'isolation',
  summary:
    `a neighbour's exec echo and GET sandbox, back to back, ${PHASE_SECONDS} s per phase: quiet, while another account floods ` +
    `output, spins CPU and writes to disk, quiet again (goal: p99 ≤ ${GOAL_P99_RATIO}× quiet); RSS of every Paddock process (goal: ≤ ${GOAL_GROWTH_MB} MB growth)`,
  async run(ctx) {
    const stack = await startStack(ctx, 'isolation');
    try {
      const [attackerKey, neighbourKey] = [await mintApiKey(stack.url), await mintApiKey(stack.url)];
      const attackerBox = await createRunningSandbox(stack.url, attackerKey);
      const neighbourBox = await createRunningSandbox(stack.url, neighbourKey);
      // The spawner starts with the first exec: measure from there.
      await call(stack.url, neighbourKey, 'POST', `/v1/sandboxes/${neighbourBox.id}/exec`, { command: ['true'] });
      const baseline = new Map([...paddockProcesses(stack)].map(([name, pid]) => [name, rssOf(pid) ?? 0]));
      const peak = new Map(baseline);
      const sampler = setInterval(() => {
        for (const [name, pid] of paddockProcesses(stack)) peak.set(name, Math.max(peak.get(name) ?? 0, rssOf(pid) ?? 0));
      }, 100);

      const rows: BenchRow[] = [];
      let quietExecP99 = 0;
      let quietGetP99 = 0;
      try {
        for (const attack of ATTACKS) {
          const ready = attack.loops === 0 ? undefined : await attackerReady(attack.name, PHASE_SECONDS * 1000, { url: stack.url, key: attackerKey, sandboxId: attackerBox.id });
          const end = performance.now() + PHASE_SECONDS * 1000;
          const attackers = ready?.go();
          const execMs: number[] = [];
          const getMs: number[] = [];
          let errors = 0;
          while (performance.now() < end) {
            const exec = await call(stack.url, neighbourKey, 'POST', `/v1/sandboxes/${neighbourBox.id}/exec`, { command: ['echo', 'hi'] }).catch(() => undefined);
            if (exec?.status === 200) execMs.push(exec.ms);
            else errors++;
            const get = await call(stack.url, neighbourKey, 'GET', `/v1/sandboxes/${neighbourBox.id}`).catch(() => undefined);
            if (get?.status === 200) getMs.push(get.ms);
            else errors++;
          }
          await attackers;
          const execP99 = percentile(execMs, 99);
          const getP99 = percentile(getMs, 99);
          if (attack.name === 'quiet') {
            quietExecP99 = execP99;
            quietGetP99 = getP99;
          }
          if (errors > 0) ctx.warn(`isolation, ${attack.name}: ${errors} of the neighbour's requests failed`);
          const execRatio = execP99 / quietExecP99;
          const getRatio = getP99 / quietGetP99;
          ctx.log(`  ${attack.name}: exec p50 ${percentile(execMs, 50)} p99 ${execP99} ms (×${execRatio.toFixed(2)}), GET p50 ${percentile(getMs, 50)} p99 ${getP99} ms (×${getRatio.toFixed(2)})`);
          rows.push({
            table: 'neighbour',
            subject: attack.name,
            figures: {
              'exec n': execMs.length,
              'exec p50 ms': percentile(execMs, 50),
              'exec p99 ms': execP99,
              'exec p99 / quiet': `×${execRatio.toFixed(2)}`,
              'GET p50 ms': percentile(getMs, 50),
              'GET p99 ms': getP99,
              'GET p99 / quiet': `×${getRatio.toFixed(2)}`,
              errors,
            },
            goal: { text: `p99 ≤ ${GOAL_P99_RATIO}× quiet`, met: execRatio <= GOAL_P99_RATIO && getRatio <= GOAL_P99_RATIO && errors === 0 },
          });
        }
      } finally {
        clearInterval(sampler);
      }
      const after = new Map([...paddockProcesses(stack)].map(([name, pid]) => [name, rssOf(pid) ?? 0]));
      for (const [name, before] of baseline) {
        const growth = Math.max(peak.get(name) ?? 0, after.get(name) ?? 0) - before;
        rows.push({
          table: 'memory',
          subject: name,
          figures: {
            'RSS before MB': round(before / 2 ** 20),
            'peak MB': round((peak.get(name) ?? 0) / 2 ** 20),
            'after MB': round((after.get(name) ?? 0) / 2 ** 20),
            'growth MB': round(growth / 2 ** 20),
          },
          goal: { text: `growth ≤ ${GOAL_GROWTH_MB} MB`, met: growth <= GOAL_GROWTH_MB * 2 ** 20 },
        });
      }
      return rows;
    } finally {
      await stack.stop();
    }
  },
};
