import type { Benchmark } from './types.ts';
import { checkAnswers, rows, type Subject } from './account.ts';
import { measure } from './load.ts';
import type { NodeProcess } from './processes.ts';
import { createRunningSandbox, startStack, type Stack } from './stack.ts';
import { mintApiKey, startFloor } from './targets.ts';

// The goal (≥ 70% of the floor) is the account benchmark's, applied by its rows().
const GOAL = 0.7;

export const getSandboxBenchmark: Benchmark = {
  name: 'get-sandbox',
  summary: `GET /v1/sandboxes/{id} with an API key against the same floor as account (autocannon); goal ≥ ${GOAL * 100}% of the floor's req/s`,
  async run(ctx) {
    let floor: NodeProcess | undefined;
    let stack: Stack | undefined;
    try {
      floor = await startFloor(ctx);
      stack = await startStack(ctx, 'get-sandbox');
      const key = await mintApiKey(stack.url);
      const sandbox = await createRunningSandbox(stack.url, key);
      const subjects: Subject[] = [
        { name: 'floor: Koa + Redis GET + SELECT 1', target: { url: `${floor.url}/`, pid: floor.pid }, rounds: [] },
        {
          name: 'paddock GET /v1/sandboxes/{id} (log info)',
          target: { url: `${stack.url}/v1/sandboxes/${sandbox.id}`, headers: { authorization: `Bearer ${key}` }, pid: stack.webPid },
          rounds: [],
        },
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
      await stack?.stop();
      await floor?.stop();
    }
  },
};
