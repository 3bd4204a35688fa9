import type { Benchmark, BenchRow } from './types.ts';
import { combine, measure, type LoadFigures, type Target } from './load.ts';
import type { NodeProcess } from './processes.ts';
import { signUp, startFloor, startPaddock } from './targets.ts';

// What a refusal costs. In the abuse bench an attacker's loops get thousands of 429s in
// ten seconds, and each one is a connection's parse, an authentication and an answer on the web's
// one thread, on the cores every tenant's commands share. Measured as server CPU per answer,
// against the floor's per served request in the same run (req/s would mostly measure autocannon).

/** A refusal may cost at most this share of the floor's CPU per (served) request. */
const GOAL_CPU_RATIO = 1;

export const refusalsBenchmark: Benchmark = {
  name: 'refusals',
  summary: `GET /v1/account with a key whose account's bucket is empty (429 rate_limited), server CPU per answer against the floor's per request; goal ≤ ${GOAL_CPU_RATIO}× the floor`,
  async run(ctx) {
    const processes: NodeProcess[] = [];
    try {
      const floor = await startFloor(ctx);
      processes.push(floor);
      // Two tokens a minute: signing up's key takes one, the check below the other.
      const paddock = await startPaddock(ctx, 'info', { name: 'paddock-refusing', env: { PADDOCK_RATE_ACCOUNT_PER_MIN: '2' } });
      processes.push(paddock);
      const { key } = await signUp(paddock.url);
      const target: Target = { url: `${paddock.url}/v1/account`, headers: { authorization: `Bearer ${key}` }, pid: paddock.pid };
      await fetch(target.url, { headers: target.headers });
      const refused = await fetch(target.url, { headers: target.headers });
      if (refused.status !== 429) throw new Error(`the empty bucket answered ${refused.status}, not 429: ${await refused.text()}`);

      const rounds: { floor: LoadFigures[]; paddock: LoadFigures[] } = { floor: [], paddock: [] };
      for (let round = 1; round <= ctx.load.rounds; round++) {
        for (const [name, subject] of [['floor', { url: `${floor.url}/`, pid: floor.pid }], ['paddock', target]] as const) {
          ctx.log(`round ${round}/${ctx.load.rounds}: ${name}`);
          const figures = await measure(subject, ctx.load);
          ctx.log(`  ${figures.requestsPerSecond.toFixed(0)} answers/s, server CPU ${figures.cpuUsPerRequest?.toFixed(0)} µs each, ${JSON.stringify(figures.statusCodes)}`);
          rounds[name].push(figures);
        }
      }
      const base = combine(rounds.floor);
      const refusing = combine(rounds.paddock);
      const refusedShare = (refusing.statusCodes['429'] ?? 0) / Math.max(1, refusing.completed);
      if (refusedShare < 0.999) ctx.warn(`only ${(refusedShare * 100).toFixed(1)}% of the answers were 429: ${JSON.stringify(refusing.statusCodes)}`);
      const ratio = (refusing.cpuUsPerRequest ?? NaN) / (base.cpuUsPerRequest ?? NaN);
      const row = (subject: string, perRound: LoadFigures[], f: LoadFigures, extra: Record<string, string>): BenchRow => ({
        subject,
        figures: {
          'answers/s': Math.round(f.requestsPerSecond),
          'p50 ms': f.p50Ms,
          'p99 ms': f.p99Ms,
          'server CPU µs/answer': Math.round(f.cpuUsPerRequest ?? NaN),
          ...extra,
        },
        detail: { rounds: perRound, statusCodes: f.statusCodes },
      });
      return [
        row('floor: Koa + Redis GET + SELECT 1 (200)', rounds.floor, base, { 'CPU of floor': '×1.00' }),
        {
          ...row('paddock GET /v1/account refused (429, log info)', rounds.paddock, refusing, { 'CPU of floor': `×${ratio.toFixed(2)}` }),
          goal: { text: `≤ ${GOAL_CPU_RATIO}× the floor's CPU per request`, met: ratio <= GOAL_CPU_RATIO && refusedShare >= 0.999 },
        },
      ];
    } finally {
      for (const p of processes.reverse()) await p.stop();
    }
  },
};
