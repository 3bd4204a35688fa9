import type { Benchmark, BenchContext, BenchRow } from './types.ts';
import { combine, measure, type LoadFigures, type Target } from './load.ts';
import { mintApiKey, startFloor, startPaddock } from './targets.ts';
import type { NodeProcess } from './processes.ts';

const GOAL = 0.7;
// Both levels, because one access-log line per request is a real share of a request this cheap:
// warn shows the code path alone, info (the production default) what a deployment gets.
const LOG_LEVELS = ['warn', 'info'];

export interface Subject {
  name: string;
  target: Target;
  rounds: LoadFigures[];
}

export const accountBenchmark: Benchmark = {
  name: 'account',
  summary: `GET /v1/account with an API key against a bare Koa floor (one Redis GET + one SELECT 1); goal ≥ ${GOAL * 100}% of the floor's req/s`,
  async run(ctx) {
    const processes: NodeProcess[] = [];
    try {
      const floor = await startFloor(ctx);
      processes.push(floor);
      const paddocks: NodeProcess[] = [];
      for (const level of LOG_LEVELS) {
        const paddock = await startPaddock(ctx, level);
        processes.push(paddock);
        paddocks.push(paddock);
      }
      const apiKey = await mintApiKey(paddocks[0]!.url);

      const subjects: Subject[] = [
        { name: 'floor: Koa + Redis GET + SELECT 1', target: { url: `${floor.url}/`, pid: floor.pid }, rounds: [] },
        ...paddocks.map((p, i) => ({
          name: `paddock GET /v1/account (log ${LOG_LEVELS[i]})`,
          target: { url: `${p.url}/v1/account`, headers: { authorization: `Bearer ${apiKey}` }, pid: p.pid },
          rounds: [],
        })),
      ];
      await checkAnswers(subjects);
      for (let round = 1; round <= ctx.load.rounds; round++) {
        for (const subject of subjects) {
          ctx.log(`round ${round}/${ctx.load.rounds}: ${subject.name}`);
          const figures = await measure(subject.target, ctx.load);
          const cpu = figures.cpuUsPerRequest === undefined ? '' : `, server CPU ${figures.cpuUsPerRequest.toFixed(0)} µs/req`;
          ctx.log(`  ${figures.requestsPerSecond.toFixed(0)} req/s, p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms${cpu}`);
          subject.rounds.push(figures);
        }
      }
      return rows(ctx, subjects);
    } finally {
      for (const p of processes.reverse()) await p.stop();
    }
  },
};

/** One request each before the load: a 401 or 500 measured at full speed would mean nothing. */
export async function checkAnswers(subjects: Subject[]): Promise<void> {
  for (const { name, target } of subjects) {
    const res = await fetch(target.url, { headers: target.headers ?? {} });
    if (!res.ok) throw new Error(`${name} answered ${res.status}: ${await res.text()}`);
  }
}

export function rows(ctx: BenchContext, subjects: Subject[]): BenchRow[] {
  const floor = combine(subjects[0]!.rounds);
  return subjects.map((subject, i) => {
    const all = combine(subject.rounds);
    const failures = all.non2xx + all.errors + all.timeouts;
    if (failures > 0) {
      ctx.warn(`${subject.name}: ${all.non2xx} non-2xx, ${all.errors} errors, ${all.timeouts} timeouts ` +
        `(status codes ${JSON.stringify(all.statusCodes)}): its figures are not comparable`);
    }
    const ratio = all.requestsPerSecond / floor.requestsPerSecond;
    return {
      subject: subject.name,
      figures: {
        'req/s': Math.round(all.requestsPerSecond),
        'req/s by round': subject.rounds.map((r) => Math.round(r.requestsPerSecond)).join(' / '),
        'p50 ms': all.p50Ms,
        'p99 ms': all.p99Ms,
        'server CPU µs/req': all.cpuUsPerRequest === undefined ? 'n/a' : Math.round(all.cpuUsPerRequest),
        failed: failures,
        'of floor': `${(ratio * 100).toFixed(1)}%`,
      },
      detail: { rounds: subject.rounds },
      ...(i > 0 ? { goal: { text: `≥ ${GOAL * 100}% of floor`, met: ratio >= GOAL } } : {}),
    };
  });
}
