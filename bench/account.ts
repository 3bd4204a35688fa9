import type { Benchmark } from './types.ts';
import { compareWithFloor, GOAL, type Subject } from './compare.ts';
import { mintApiKey, startFloor, startPaddock } from './targets.ts';
import type { NodeProcess } from './processes.ts';

// Both levels, because one access-log line per request is a real share of a request this cheap:
// warn shows the code path alone, info (the production default) what a deployment gets.
const LOG_LEVELS = ['warn', 'info'];

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
      return await compareWithFloor(ctx, subjects);
    } finally {
      for (const p of processes.reverse()) await p.stop();
    }
  },
};
