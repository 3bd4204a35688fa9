import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { createRunningSandbox, startStack } from './stack.ts';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Sandbox } from '../shared/sdk/index.ts';
import { FILE_MIB } from './sdk-ts-memory.ts';

// @paddock/sdk's Sandbox handle in this process against bare fetch making the same requests, in
// turns; then a 100 MiB file written and read back through the handle, and read again through bare
// fetch, each in a process of its own, with that process's peak RSS over its RSS before.

const CALLS = 200;
/** What the SDK's streams may hold beyond bare fetch's own. */
const FLOOR_MARGIN_MB = 8;
const MEMORY_SCRIPT = fileURLToPath(new URL('./sdk-ts-memory.ts', import.meta.url));
const run = promisify(execFile);

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export const sdkTsBenchmark: Benchmark = {
  name: 'sdk-ts',
  summary: '@paddock/sdk\'s Sandbox handle per call against bare fetch making the same request (GET a sandbox, exec `true`), p50 interleaved; a 100 MiB file written and read back through the handle, with the extra RSS',
  async run(ctx) {
    const stack = await startStack(ctx, 'sdk-ts');
    try {
      const key = await mintApiKey(stack.url);
      const { id } = await createRunningSandbox(stack.url, key);
      const sbx = await Sandbox.connect(id, { apiKey: key, baseUrl: stack.url });
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const bare = {
        info: async () => (await fetch(`${stack.url}/v1/sandboxes/${id}`, { headers })).json(),
        exec: async () => (await fetch(`${stack.url}/v1/sandboxes/${id}/exec`, { method: 'POST', headers, body: JSON.stringify({ command: ['true'] }) })).json(),
      };
      const sdk = { info: () => sbx.info(), exec: () => sbx.commands.run(['true']) };
      const rows: BenchRow[] = [];
      for (const name of ['info', 'exec'] as const) {
        const times = { sdk: [] as number[], fetch: [] as number[] };
        for (let i = 0; i < 10; i++) await Promise.all([sdk[name](), bare[name]()]);
        for (let i = 0; i < CALLS; i++) {
          for (const side of i % 2 ? (['sdk', 'fetch'] as const) : (['fetch', 'sdk'] as const)) {
            const t0 = performance.now();
            await (side === 'sdk' ? sdk[name]() : bare[name]());
            times[side].push(performance.now() - t0);
          }
        }
        const ratio = p50(times.sdk) / p50(times.fetch);
        rows.push({
          subject: name === 'info' ? 'GET a sandbox (sbx.info())' : 'exec `true` (sbx.commands.run)',
          figures: { n: CALLS, 'SDK p50 ms': +p50(times.sdk).toFixed(2), 'fetch p50 ms': +p50(times.fetch).toFixed(2), ratio: +ratio.toFixed(2) },
          goal: { text: '≤ 1.2× bare fetch', met: ratio <= 1.2 },
        });
      }
      // Each phase in a process of its own (bench/sdk-ts-memory.ts), its peak RSS over its RSS
      // before. The floor: the same file read through bare fetch, whose chunks are garbage V8
      // frees only once about 64 MB more memory outside its heap is in use than at the last
      // collection; a reader that streams cannot stay far below that floor, only near it.
      const env = { ...process.env, PADDOCK_BENCH_URL: stack.url, PADDOCK_BENCH_KEY: key, PADDOCK_BENCH_SANDBOX: id };
      const phase = async (name: 'write' | 'read' | 'fetch-read') => {
        const { stdout } = await run(process.execPath, [MEMORY_SCRIPT, name], { env, maxBuffer: 1024 * 1024 });
        return JSON.parse(stdout) as { seconds: number; extraMb: number };
      };
      const write = await phase('write');
      const read = await phase('read');
      const floor = await phase('fetch-read');
      ctx.log(`  extra RSS: write +${write.extraMb.toFixed(1)} MB, read +${read.extraMb.toFixed(1)} MB, bare fetch read +${floor.extraMb.toFixed(1)} MB`);
      const mbps = (seconds: number) => +((FILE_MIB * 1.048576) / seconds).toFixed(1);
      rows.push({
        table: 'file',
        subject: `${FILE_MIB} MiB written and read back`,
        figures: {
          'write MB/s': mbps(write.seconds),
          'read MB/s': mbps(read.seconds),
          'write extra RSS MB': +write.extraMb.toFixed(1),
          'read extra RSS MB': +read.extraMb.toFixed(1),
          'bare fetch read extra RSS MB': +floor.extraMb.toFixed(1),
        },
        goal: { text: `< 64 MB extra RSS, or within ${FLOOR_MARGIN_MB} MB of bare fetch's`, met: [write.extraMb, read.extraMb].every((mb) => mb < 64 || mb <= floor.extraMb + FLOOR_MARGIN_MB) },
      });
      await sbx.destroy();
      for (const row of rows) ctx.log(`  ${row.subject}: ${JSON.stringify(row.figures)}`);
      return rows;
    } finally {
      await stack.stop();
    }
  },
};
