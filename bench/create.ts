import { randomBytes } from 'node:crypto';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { callOk, localRuntimeOn, percentile, removeDataDir, round, sandboxDataDir, startStack, type SandboxObject } from './stack.ts';

const GOAL_MS = 15;
const COUNT = Number(process.env.BENCH_CREATE_COUNT ?? 50);
const WARMUP = 3;

export const createBenchmark: Benchmark = {
  name: 'create',
  summary: `POST /v1/sandboxes (waits until running) against the raw local runtime's create, ${COUNT} sequential each, interleaved; goal: overhead ≤ ${GOAL_MS} ms at p50`,
  async run(ctx) {
    const stack = await startStack(ctx, 'create');
    const rawDir = sandboxDataDir('create-raw');
    const runtime = localRuntimeOn(rawDir);
    try {
      const key = await mintApiKey(stack.url);
      const api: number[] = [];
      const raw: number[] = [];
      const apiServer: number[] = [];
      for (let i = 0; i < WARMUP + COUNT; i++) {
        const created = await callOk(stack.url, key, 'POST', '/v1/sandboxes', {});
        const sandbox = created.body as SandboxObject;
        if (sandbox.status !== 'running') throw new Error(`sandbox ${sandbox.id} is ${sandbox.status}`);
        await callOk(stack.url, key, 'DELETE', `/v1/sandboxes/${sandbox.id}`);

        const id = `sbx_${randomBytes(10).toString('hex')}`;
        const started = performance.now();
        const state = await runtime.create({ id, accountId: 'acc_bench', capSeconds: 3600 });
        const rawMs = performance.now() - started;
        if (state.status !== 'running') throw new Error(`raw sandbox ${id} is ${state.status}`);
        await runtime.destroy(id);
        if (i < WARMUP) continue;
        api.push(created.ms);
        raw.push(rawMs);
        apiServer.push(Date.parse(sandbox.readyAt!) - Date.parse(sandbox.createdAt));
        if ((i - WARMUP + 1) % 10 === 0) ctx.log(`  ${i - WARMUP + 1}/${COUNT}: API p50 ${percentile(api, 50)} ms, raw p50 ${percentile(raw, 50)} ms`);
      }
      const overhead = percentile(api, 50) - percentile(raw, 50);
      const rows: BenchRow[] = [
        {
          subject: 'raw runtime: createLocalRuntime().create()',
          figures: { n: raw.length, 'p50 ms': percentile(raw, 50), 'p99 ms': percentile(raw, 99), 'max ms': percentile(raw, 100) },
          detail: { samples: raw.map((v) => round(v)) },
        },
        {
          subject: 'API: POST /v1/sandboxes until running',
          figures: { n: api.length, 'p50 ms': percentile(api, 50), 'p99 ms': percentile(api, 99), 'max ms': percentile(api, 100), 'overhead p50 ms': round(overhead) },
          goal: { text: `overhead ≤ ${GOAL_MS} ms at p50`, met: overhead <= GOAL_MS },
          detail: { samples: api.map((v) => round(v)) },
        },
        {
          subject: '(API: readyAt − createdAt, as stored)',
          figures: { n: apiServer.length, 'p50 ms': percentile(apiServer, 50), 'p99 ms': percentile(apiServer, 99), 'max ms': percentile(apiServer, 100) },
        },
      ];
      return rows;
    } finally {
      await runtime.close();
      await removeDataDir(rawDir);
      await stack.stop();
    }
  },
};
