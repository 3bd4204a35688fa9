import type { BenchContext, BenchRow } from './types.ts';
import { combine, measure, type LoadFigures, type Target } from './load.ts';

/** The share of the floor's req/s that each Paddock subject is held to. */
export const GOAL = 0.7;

export interface Subject {
  name: string;
  target: Target;
  rounds: LoadFigures[];
}

/** A row per subject, each after the first (the floor) held to the goal against it. */
export async function compareWithFloor(ctx: BenchContext, subjects: Subject[]): Promise<BenchRow[]> {
  await checkAnswers(subjects);
  // Each round passes over every subject, so that drift over the run (heat, neighbours) weighs on all alike.
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
}

/** One request each before the load: a 401 or 500 measured at full speed would mean nothing. */
async function checkAnswers(subjects: Subject[]): Promise<void> {
  for (const { name, target } of subjects) {
    const res = await fetch(target.url, { headers: target.headers ?? {} });
    if (!res.ok) throw new Error(`${name} answered ${res.status}: ${await res.text()}`);
  }
}

function rows(ctx: BenchContext, subjects: Subject[]): BenchRow[] {
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
