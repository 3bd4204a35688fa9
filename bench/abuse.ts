import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { configSchema } from '../shared/config.ts';
import { PHASES, SECRETS, type AttackerWorld } from './abuse-attacks.ts';
import { startAttacker } from './attacker-process.ts';
import { ProcessSampler } from './paddock-processes.ts';
import { mintApiKey } from './targets.ts';
import { call, callOk, createRunningSandbox, percentile, round, startStack, UNLIMITED, type Stack } from './stack.ts';
import type { Benchmark, BenchRow } from './types.ts';

// A hostile client against a default configuration, one class of attack per phase
// (bench/abuse-attacks.ts, run in a process of its own): neighbour accounts' GET of their
// sandboxes and exec of `echo`, quiet and during each attack, same run; the web's worst
// event-loop lag and every Paddock process's peak RSS and descriptors per phase.

const PHASE_SECONDS = Number(process.env.BENCH_ABUSE_SECONDS ?? 10);
/** BENCH_ABUSE_ONLY=text runs the quiet phase and the attacks whose name holds the text. */
const ONLY = process.env.BENCH_ABUSE_ONLY;
export const GOAL_P99_RATIO = 2;
export const GOAL_P99_SLACK_MS = 10;
const MEMORY_BUDGET_MB = 256;
/**
 * The neighbour is several accounts taking turns, each within its own sandbox_ops bucket at the
 * default rate (an exec every NEIGHBOUR_EXEC_EVERY_MS in all); GETs, which have no bucket, fill
 * the time between.
 */
const NEIGHBOURS = 8;
const NEIGHBOUR_EXEC_EVERY_MS = 100;

/** Every limit at its default, except signing up: the bench makes several accounts from one address. */
export function defaultLimits(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PADDOCK_RATE_AUTH_PER_MIN: '10000' };
  const shape = configSchema.shape as Record<string, { parse(v: unknown): unknown }>;
  for (const name of Object.keys(UNLIMITED)) {
    if (name !== 'PADDOCK_RATE_AUTH_PER_MIN') env[name] = String(shape[name]!.parse(undefined));
  }
  return env;
}

async function eventLoopLagMaxMs(stack: Stack): Promise<number> {
  const text = await (await fetch(new URL('/metrics', stack.url))).text();
  const seconds = /^paddock_api_nodejs_eventloop_lag_max_seconds ([\d.e+-]+)/m.exec(text)?.[1];
  return seconds === undefined ? NaN : round(Number(seconds) * 1000);
}

type WorldData = Omit<AttackerWorld, 'statuses'>;

/** Starts one phase's attacker in its own process, ready to go; `go` answers the statuses the attacker got. */
async function readyAttacker(phase: string, milliseconds: number, world: WorldData): Promise<{ go(): Promise<Map<number, number>> }> {
  const attacker = await startAttacker(resolve(import.meta.dirname, 'abuse-attacker.ts'), [phase, String(milliseconds), JSON.stringify(world)]);
  return { go: async () => new Map(JSON.parse(await attacker.go()) as [number, number][]) };
}

async function prepare(stack: Stack): Promise<WorldData> {
  const key = await mintApiKey(stack.url);
  const boxes = [(await createRunningSandbox(stack.url, key)).id, (await createRunningSandbox(stack.url, key)).id];
  const sh = (box: string, command: string, k = key) => callOk(stack.url, k, 'POST', `/v1/sandboxes/${box}/exec`, { command, timeoutSeconds: 120 });
  // Account-wide secrets, each sharing a long beginning with the others (within the account
  // bucket's burst: the count cap itself is pinned by the tests).
  for (let i = 0; i < SECRETS; i++) await callOk(stack.url, key, 'POST', '/v1/secrets', { name: `S${i}`, value: `s3cr3t-s3cr3t-s3cr3t-${i}` });
  await sh(boxes[1]!, 'mkdir -p deep; cd deep; for i in $(seq 40); do mkdir -p $(printf "a%.0s/" $(seq $i)); done; head -c 10485760 /dev/zero | tr "\\0" "\\n" > ../newlines');
  const fullKey = await mintApiKey(stack.url);
  const fullBox = (await createRunningSandbox(stack.url, fullKey)).id;
  await sh(fullBox, 'mkdir f && cd f && seq 100000 | xargs touch', fullKey);
  return { stack: { url: stack.url }, key, boxes, fullKey, fullBox };
}

export const abuseBenchmark: Benchmark = {
  name: 'abuse',
  summary:
    `a neighbour's GET sandbox and exec echo, quiet and during each attack of a hostile client on default limits, ${PHASE_SECONDS} s a phase ` +
    `(goal: p99 ≤ ${GOAL_P99_RATIO}× quiet + ${GOAL_P99_SLACK_MS} ms, no 5xx); event-loop lag; peak RSS and descriptors of every Paddock process (goal: ≤ ${MEMORY_BUDGET_MB} MB growth, no crash)`,
  async run(ctx) {
    const stack = await startStack(ctx, 'abuse', defaultLimits());
    try {
      const world = await prepare(stack);
      const neighbours: { key: string; box: string }[] = [];
      for (let i = 0; i < NEIGHBOURS; i++) {
        const key = await mintApiKey(stack.url);
        neighbours.push({ key, box: (await createRunningSandbox(stack.url, key)).id });
      }
      await call(stack.url, neighbours[0]!.key, 'POST', `/v1/sandboxes/${neighbours[0]!.box}/exec`, { command: ['true'] });
      const sampler = new ProcessSampler(stack);
      const baseline = new Map(sampler.peakRss);
      const startPids = new Map([...sampler.pids].map(([name, pids]) => [name, [...pids][0]!]));
      const rows: BenchRow[] = [];
      const peakRss = new Map<string, number>();
      const peakFds = new Map<string, number>();
      let quiet = { exec: 0, get: 0 };
      try {
        for (const phase of PHASES.filter((p) => !ONLY || p.name === 'quiet' || p.name.includes(ONLY))) {
          const milliseconds = PHASE_SECONDS * 1000;
          const ready = phase.name.startsWith('quiet') ? undefined : await readyAttacker(phase.name, milliseconds, world);
          sampler.reset();
          await eventLoopLagMaxMs(stack);
          const end = performance.now() + milliseconds;
          const attacker = ready ? ready.go() : sleep(milliseconds).then(() => new Map<number, number>());
          const execMs: number[] = [];
          const getMs: number[] = [];
          // When in the phase the slowest execs came: at an attack's start, at its end, or throughout;
          // and how much of each was the runtime's (the command's durationMs), the rest the API's.
          const execAt: number[] = [];
          const execRun: number[] = [];
          const phaseStart = performance.now();
          let serverErrors = 0;
          let failures = 0;
          const record = (res: { status: number; ms: number } | undefined, samples: number[]) => {
            if (res?.status === 200) samples.push(res.ms);
            else if ((res?.status ?? 500) >= 500) serverErrors++;
            else failures++;
          };
          for (let turn = 0; performance.now() < end; turn++) {
            const n = neighbours[turn % NEIGHBOURS]!;
            const nextExec = performance.now() + NEIGHBOUR_EXEC_EVERY_MS;
            const sentAt = performance.now() - phaseStart;
            const before = execMs.length;
            const answer = await call(stack.url, n.key, 'POST', `/v1/sandboxes/${n.box}/exec`, { command: ['echo', 'hi'] }).catch(() => undefined);
            record(answer, execMs);
            if (execMs.length > before) {
              execAt.push(sentAt);
              execRun.push((answer!.body as { durationMs: number }).durationMs);
            }
            do record(await call(stack.url, n.key, 'GET', `/v1/sandboxes/${n.box}`).catch(() => undefined), getMs);
            while (performance.now() < nextExec);
          }
          const statuses = await attacker;
          const lag = await eventLoopLagMaxMs(stack);
          for (const [name, rss] of sampler.peakRss) peakRss.set(name, Math.max(peakRss.get(name) ?? 0, rss));
          for (const [name, fds] of sampler.peakFds) peakFds.set(name, Math.max(peakFds.get(name) ?? 0, fds));
          const execP99 = percentile(execMs, 99);
          const getP99 = percentile(getMs, 99);
          if (phase.name === 'quiet') quiet = { exec: execP99, get: getP99 };
          const met =
            execP99 <= GOAL_P99_RATIO * quiet.exec + GOAL_P99_SLACK_MS && getP99 <= GOAL_P99_RATIO * quiet.get + GOAL_P99_SLACK_MS && serverErrors === 0 && failures === 0;
          const answers = [...statuses].sort(([a], [b]) => a - b).map(([st, n]) => (st === -1 ? 'some held to the end' : st === -2 ? 'all dropped' : `${n}× ${st === 0 ? 'closed' : st}`));
          if (serverErrors + failures > 0) ctx.warn(`abuse, ${phase.name}: ${serverErrors} 5xx and ${failures} other failures for the neighbour`);
          ctx.log(`  ${phase.name}: exec p50 ${percentile(execMs, 50)} p99 ${execP99} ms, GET p50 ${percentile(getMs, 50)} p99 ${getP99} ms, lag ${lag} ms`);
          const slowest = execMs.map((ms, i) => ({ ms, at: execAt[i]!, run: execRun[i]! })).sort((a, b) => b.ms - a.ms).slice(0, 6);
          ctx.log(
            `    slowest execs (ms, sent at s into the phase, the runtime's ms of it): ${slowest.map((e) => `${Math.round(e.ms)} at ${(e.at / 1000).toFixed(2)} (${Math.round(e.run)})`).join(', ')}`,
          );
          rows.push({
            table: 'neighbour',
            subject: phase.name,
            figures: {
              'exec p50 ms': percentile(execMs, 50),
              'exec p99 ms': execP99,
              'GET p50 ms': percentile(getMs, 50),
              'GET p99 ms': getP99,
              'lag max ms': lag,
              'neighbour 5xx': serverErrors,
              'web peak MB': round((sampler.peakRss.get('web') ?? 0) / 2 ** 20),
              'spawner peak fds': sampler.peakFds.get('web spawner') ?? 0,
              'attacker got': answers.join(', ') || '-',
            },
            goal: { text: `p99 ≤ ${GOAL_P99_RATIO}× quiet + ${GOAL_P99_SLACK_MS} ms, no 5xx`, met },
          });
        }
      } finally {
        sampler.stop();
      }
      const atEnd = new ProcessSampler(stack);
      atEnd.stop();
      for (const [name, before] of baseline) {
        // A role seen under a second pid, or whose first one is gone, crashed (and was restarted).
        const crashed = (sampler.pids.get(name)?.size ?? 0) > 1 || atEnd.pids.get(name)?.has(startPids.get(name)!) !== true;
        const growthMb = ((peakRss.get(name) ?? 0) - before) / 2 ** 20;
        rows.push({
          table: 'processes',
          subject: name,
          figures: { 'RSS before MB': round(before / 2 ** 20), 'peak MB': round((peakRss.get(name) ?? 0) / 2 ** 20), 'growth MB': round(growthMb), 'peak fds': peakFds.get(name) ?? 0, crashed: crashed ? 'yes' : 'no' },
          goal: { text: `≤ ${MEMORY_BUDGET_MB} MB growth, no crash`, met: growthMb <= MEMORY_BUDGET_MB && !crashed },
        });
      }
      return rows;
    } finally {
      await stack.stop();
    }
  },
};
