import type { Benchmark } from './types.ts';
import { compareWithFloor, GOAL, type Subject } from './compare.ts';
import type { NodeProcess } from './processes.ts';
import { createRunningSandbox, startStack, type Stack } from './stack.ts';
import { mintApiKey, startFloor, startPaddock } from './targets.ts';

export const getSandboxBenchmark: Benchmark = {
  name: 'get-sandbox',
  summary: `GET /v1/sandboxes/{id} with an API key against the same floor as account (autocannon); goal ≥ ${GOAL * 100}% of the floor's req/s`,
  async run(ctx) {
    let floor: NodeProcess | undefined;
    let noViews: NodeProcess | undefined;
    let stack: Stack | undefined;
    try {
      floor = await startFloor(ctx);
      stack = await startStack(ctx, 'get-sandbox');
      const key = await mintApiKey(stack.url);
      const sandbox = await createRunningSandbox(stack.url, key);
      // A web of the same database that reads PostgreSQL every time (shared/cache/read-views.ts): what the views save.
      noViews = await startPaddock(ctx, 'info', { name: 'paddock-no-views', env: { PADDOCK_READ_CACHE_SECONDS: '0' } });
      const subjects: Subject[] = [
        { name: 'floor: Koa + Redis GET + SELECT 1', target: { url: `${floor.url}/`, pid: floor.pid }, rounds: [] },
        {
          name: 'paddock GET /v1/sandboxes/{id} (log info)',
          target: { url: `${stack.url}/v1/sandboxes/${sandbox.id}`, headers: { authorization: `Bearer ${key}` }, pid: stack.webPid },
          rounds: [],
        },
        {
          name: 'paddock GET /v1/sandboxes/{id} (log info, no views)',
          target: { url: `${noViews.url}/v1/sandboxes/${sandbox.id}`, headers: { authorization: `Bearer ${key}` }, pid: noViews.pid },
          rounds: [],
        },
      ];
      return await compareWithFloor(ctx, subjects);
    } finally {
      await noViews?.stop();
      await stack?.stop();
      await floor?.stop();
    }
  },
};
