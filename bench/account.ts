import type { Benchmark } from './types.ts';
import { compareWithFloor, GOAL, type Subject } from './compare.ts';
import { mintApiKey, startFloor, startPaddock } from './targets.ts';
import type { NodeProcess } from './processes.ts';

// Both levels, because one access-log line per request is a real share of a request this cheap:
// warn shows the code path alone, info (the production default) what a deployment gets. The last
// reads PostgreSQL every time (no view kept in Redis, shared/cache/read-views.ts): what the views save.
const WEBS = [
  { name: 'log warn', level: 'warn', env: {} },
  { name: 'log info', level: 'info', env: {} },
  { name: 'log info, no views', level: 'info', env: { PADDOCK_READ_CACHE_SECONDS: '0' } },
];

export const accountBenchmark: Benchmark = {
  name: 'account',
  summary: `GET /v1/account with an API key against a bare Koa floor (one Redis GET + one SELECT 1); goal ≥ ${GOAL * 100}% of the floor's req/s`,
  async run(ctx) {
    const processes: NodeProcess[] = [];
    try {
      const floor = await startFloor(ctx);
      processes.push(floor);
      const paddocks: NodeProcess[] = [];
      for (const web of WEBS) {
        const paddock = await startPaddock(ctx, web.level, { name: `paddock-${web.name.replaceAll(/[^a-z]+/g, '-')}`, env: web.env });
        processes.push(paddock);
        paddocks.push(paddock);
      }
      const apiKey = await mintApiKey(paddocks[0]!.url);

      const subjects: Subject[] = [
        { name: 'floor: Koa + Redis GET + SELECT 1', target: { url: `${floor.url}/`, pid: floor.pid }, rounds: [] },
        ...paddocks.map((p, i) => ({
          name: `paddock GET /v1/account (${WEBS[i]!.name})`,
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
