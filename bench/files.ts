import { randomBytes } from 'node:crypto';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { callOk, createRunningSandbox, percentile, round, startStack } from './stack.ts';

const COUNT = Number(process.env.BENCH_FILES_COUNT ?? 50);
const WARMUP = 3;
const SIZES = [
  { label: '4 KiB', bytes: 4 * 1024 },
  { label: '1 MiB', bytes: 1024 * 1024 },
];

export const filesBenchmark: Benchmark = {
  name: 'files',
  summary: `PUT /v1/sandboxes/{id}/files (contentBase64) and GET …/files?encoding=base64 of 4 KiB and 1 MiB, ${COUNT} sequential round trips each`,
  async run(ctx) {
    const stack = await startStack(ctx, 'files');
    try {
      const key = await mintApiKey(stack.url);
      const sandbox = await createRunningSandbox(stack.url, key);
      const rows: BenchRow[] = [];
      for (const size of SIZES) {
        const put: number[] = [];
        const get: number[] = [];
        for (let i = 0; i < WARMUP + COUNT; i++) {
          const content = randomBytes(size.bytes);
          const path = `/v1/sandboxes/${sandbox.id}/files?path=${encodeURIComponent(`bench/${size.bytes}-${i}.bin`)}`;
          const written = await callOk(stack.url, key, 'PUT', path, { contentBase64: content.toString('base64') });
          const read = await callOk(stack.url, key, 'GET', `${path}&encoding=base64`);
          const back = Buffer.from((read.body as { contentBase64?: string }).contentBase64 ?? '', 'base64');
          if (!back.equals(content)) throw new Error(`file ${path} read back differs (${back.length} bytes)`);
          if (i < WARMUP) continue;
          put.push(written.ms);
          get.push(read.ms);
        }
        ctx.log(`  ${size.label}: PUT p50 ${percentile(put, 50)} ms, GET p50 ${percentile(get, 50)} ms`);
        for (const [what, samples] of [['PUT (create)', put], ['GET (view)', get]] as const) {
          rows.push({
            subject: `${what} ${size.label}`,
            figures: { n: samples.length, 'p50 ms': percentile(samples, 50), 'p99 ms': percentile(samples, 99), 'max ms': percentile(samples, 100) },
            detail: { samples: samples.map((v) => round(v)) },
          });
        }
      }
      return rows;
    } finally {
      await stack.stop();
    }
  },
};
