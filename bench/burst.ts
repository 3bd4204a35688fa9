import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultLimits, GOAL_P99_RATIO as GOAL_RATIO, GOAL_P99_SLACK_MS as GOAL_SLACK_MS } from './abuse.ts';
import { startAttacker } from './attacker-process.ts';
import { mintApiKey, startBurstFloor } from './targets.ts';
import { call, createRunningSandbox, percentile, round, startStack } from './stack.ts';
import type { Benchmark, BenchRow } from './types.ts';

// The abuse bench's burst (230 long execs at once) looked at closely. There, a neighbour
// execs every 100 ms, and whether one of its execs meets the burst's worst moment is chance: the
// phase's p99 moved between 13 and 138 ms from run to run. Here the neighbour runs `echo` back to
// back through each burst (its accounts taking turns, each within its default bucket), so one of
// its execs always meets it; and the burst is taken apart: its 16 admitted commands alone, its 214
// refused requests alone (the account's 16 places taken first), and whole. Bursts of each kind
// take turns, BENCH_BURSTS of each; a kind's figure is the median over its bursts of the
// neighbour's slowest exec in the burst's first WINDOW_MS. The same bursts, in turns with
// Paddock's, meet a floor (bench/burst-floor.ts: the least an API can do for an exec, spawning
// commands outside any sandbox), so what the machine itself allows is measured in the same run.

const BURSTS = Number(process.env.BENCH_BURSTS ?? 8);
/** BENCH_BURST_ONLY=text: only the kinds whose name holds the text, and the one without a burst. */
const ONLY = process.env.BENCH_BURST_ONLY;
const WINDOW_MS = 600;
const NEIGHBOURS = 20;
/** The attacker's commands time out this long after they start: their kill storm comes between bursts. */
const TIMEOUT_SECONDS = 2;

interface Kind {
  name: string;
  /** Long execs the bench starts first, 500 ms before the burst, to fill the account's places. */
  holders: number;
  /** Execs the attacker sends at once. */
  burst: number;
}

const KINDS: Kind[] = [
  { name: 'no burst', holders: 0, burst: 0 },
  { name: "16 execs at once, all admitted: the 230's admitted part alone", holders: 0, burst: 16 },
  { name: "214 execs at once, all refused (the account's 16 places taken first): its refused part alone", holders: 16, burst: 214 },
  { name: '230 long execs at once: the whole burst', holders: 0, burst: 230 },
];

/** Where the bursts go: Paddock, or its floor. */
interface Target {
  name: string;
  url: string;
  /** A new account's key, its bucket full. */
  newKey(): Promise<string>;
  /** A running sandbox of the key's. */
  newBox(key: string): Promise<string>;
  /** The sandbox gone: its commands' kill storm over before the next burst. */
  destroy(key: string, box: string): Promise<void>;
}

function paddockTarget(url: string): Target {
  return {
    name: 'paddock',
    url,
    newKey: () => mintApiKey(url),
    newBox: async (key) => (await createRunningSandbox(url, key)).id,
    async destroy(key, box) {
      // Answered once the sandbox is gone (`wait` defaults to true).
      const answer = await call(url, key, 'DELETE', `/v1/sandboxes/${box}`);
      if ((answer.body as { status?: string }).status !== 'terminated') throw new Error(`destroying sandbox ${box} answered ${answer.status} ${JSON.stringify(answer.body)}`);
    },
  };
}

function floorTarget(url: string): Target {
  const name = () => randomBytes(8).toString('hex');
  return { name: 'floor', url, newKey: async () => `floor_${name()}`, newBox: async () => `sbx_${name()}`, destroy: async () => {} };
}

interface Burst {
  /** The neighbour's slowest exec in the burst's window, ms. */
  slowest: number;
  execs: number[];
  statuses: [number, number][];
}

/** One burst of a kind against a target, the neighbour's execs timed through it. */
async function burst(target: Target, kind: Kind, neighbourExec: (target: Target) => Promise<number>): Promise<Burst> {
  // An attacker of its own for each burst, its bucket full, as bench/abuse.ts's phase has it.
  const key = await target.newKey();
  const boxes = [await target.newBox(key), await target.newBox(key)];
  const exec = (command: string) => ({ command, timeoutSeconds: TIMEOUT_SECONDS });
  const holders = Array.from({ length: kind.holders }, (_, i) => call(target.url, key, 'POST', `/v1/sandboxes/${boxes[i % 2]}/exec`, exec(`sleep ${TIMEOUT_SECONDS + 5}`)));
  if (kind.holders > 0) await sleep(500);
  const attacker =
    kind.burst > 0
      ? await startAttacker(resolve(import.meta.dirname, 'burst-attacker.ts'), [target.url, key, JSON.stringify(boxes), String(kind.burst), String(TIMEOUT_SECONDS)])
      : undefined;
  const attacked = attacker ? attacker.go() : Promise.resolve('[]');
  const end = performance.now() + WINDOW_MS;
  const execs: number[] = [];
  while (performance.now() < end) execs.push(await neighbourExec(target));
  const statuses = JSON.parse(await attacked) as [number, number][];
  await Promise.all(holders);
  await Promise.all(boxes.map((box) => target.destroy(key, box)));
  await sleep(500);
  return { slowest: Math.max(...execs), execs, statuses };
}

export const burstBenchmark: Benchmark = {
  name: 'burst',
  summary:
    `a neighbour's exec echo back to back through bursts of long execs on default limits, the burst whole and in its parts, ${BURSTS} bursts each, ` +
    `in turns against Paddock and a floor (goal: the median of the slowest exec per burst ≤ ${GOAL_RATIO}× that without a burst + ${GOAL_SLACK_MS} ms)`,
  async run(ctx) {
    const stack = await startStack(ctx, 'burst', defaultLimits());
    const floor = await startBurstFloor(ctx).catch(async (err: unknown) => {
      await stack.stop();
      throw err;
    });
    try {
      const targets = [paddockTarget(stack.url), floorTarget(floor.url)];
      const neighbours = new Map<Target, { key: string; box: string }[]>();
      for (const target of targets) {
        const list: { key: string; box: string }[] = [];
        for (let i = 0; i < NEIGHBOURS; i++) {
          const key = await target.newKey();
          list.push({ key, box: await target.newBox(key) });
        }
        neighbours.set(target, list);
      }
      let turn = 0;
      const neighbourExec = async (target: Target): Promise<number> => {
        const n = neighbours.get(target)![turn++ % NEIGHBOURS]!;
        const started = performance.now();
        const answer = await call(target.url, n.key, 'POST', `/v1/sandboxes/${n.box}/exec`, { command: ['echo', 'hi'] });
        if (answer.status !== 200) ctx.warn(`burst: the neighbour's exec on ${target.name} answered ${answer.status}`);
        return performance.now() - started;
      };
      for (const target of targets) for (let i = 0; i < NEIGHBOURS; i++) await neighbourExec(target);

      const kinds = KINDS.filter((k) => !ONLY || k.burst === 0 || k.name.includes(ONLY));
      const results = new Map(targets.map((t) => [t, new Map<Kind, Burst[]>(kinds.map((k) => [k, []]))]));
      for (let b = 0; b < BURSTS; b++) {
        for (const kind of kinds) {
          for (const target of b % 2 === 0 ? targets : [...targets].reverse()) results.get(target)!.get(kind)!.push(await burst(target, kind, neighbourExec));
        }
      }

      const summary = (target: Target, kind: Kind) => {
        const bursts = results.get(target)!.get(kind)!;
        const slowest = bursts.map((x) => x.slowest);
        const statuses = new Map<number, number>();
        for (const [status, n] of bursts.flatMap((x) => x.statuses)) statuses.set(status, (statuses.get(status) ?? 0) + n);
        return { slowest, median: percentile(slowest, 50), execs: bursts.flatMap((x) => x.execs), statuses };
      };
      const [paddock, floorOf] = targets as [Target, Target];
      const quiet = { paddock: summary(paddock, kinds[0]!).median, floor: summary(floorOf, kinds[0]!).median };
      const within = (median: number, quietMedian: number) => median <= GOAL_RATIO * quietMedian + GOAL_SLACK_MS;
      return kinds.map((kind): BenchRow => {
        const ours = summary(paddock, kind);
        const theirs = summary(floorOf, kind);
        ctx.log(`  ${kind.name}: slowest exec per burst ${ours.slowest.map((ms) => Math.round(ms)).join(', ')} ms; the floor's ${theirs.slowest.map((ms) => Math.round(ms)).join(', ')} ms`);
        const got = [...ours.statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${n}× ${status}`);
        return {
          subject: kind.name,
          figures: {
            'neighbour execs': ours.execs.length,
            'p50 ms': percentile(ours.execs, 50),
            'slowest per burst, median ms': ours.median,
            'slowest per burst, max ms': round(Math.max(...ours.slowest)),
            'attacker got': got.join(', ') || '-',
            'floor: p50 ms': percentile(theirs.execs, 50),
            'floor: slowest per burst, median ms': theirs.median,
            'floor within the goal': kind.burst > 0 ? (within(theirs.median, quiet.floor) ? 'yes' : 'no') : '-',
          },
          ...(kind.burst > 0 ? { goal: { text: `≤ ${GOAL_RATIO}× no burst's + ${GOAL_SLACK_MS} ms`, met: within(ours.median, quiet.paddock) } } : {}),
        };
      });
    } finally {
      await floor.stop();
      await stack.stop();
    }
  },
};
