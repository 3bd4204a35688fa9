import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { createRunningSandbox, startStack } from './stack.ts';
import { ensureDebianPackages, PYTHON_SDK_PACKAGES, SYSTEM_PYTHON } from '../scripts/services.ts';

// paddock-sdk from its sources (shared/sdk-python on PYTHONPATH) with the system's Python and its
// Debian httpx: bench/sdk-python.py measures, this starts the stack and reports.

const SOURCE = resolve(import.meta.dirname, '..', 'shared', 'sdk-python');

interface Figures {
  file: { mib: number; write_mb_s: number; read_mb_s: number; extra_rss_mb: number } | null;
  calls: Record<string, { n: number; sdk_p50_ms: number; httpx_p50_ms: number; ratio: number; httpx_default_p50_ms: number; sdk_cpu_us: number; httpx_cpu_us: number }>;
}

export const sdkPythonBenchmark: Benchmark = {
  name: 'sdk-python',
  summary: 'paddock-sdk per call against bare httpx making the same request on the same transport (GET a sandbox, exec `true`), and httpx on its default one, p50 interleaved; a 100 MiB file written and read back, with the extra RSS',
  async run(ctx) {
    await ensureDebianPackages(ctx.log, PYTHON_SDK_PACKAGES);
    const stack = await startStack(ctx, 'sdk-python');
    try {
      const key = await mintApiKey(stack.url);
      const sandbox = await createRunningSandbox(stack.url, key);
      const out = spawnSync(SYSTEM_PYTHON, [resolve(import.meta.dirname, 'sdk-python.py'), sandbox.id], {
        encoding: 'utf8',
        env: { ...process.env, PYTHONPATH: SOURCE, PADDOCK_BASE_URL: stack.url, PADDOCK_API_KEY: key },
        maxBuffer: 16 * 1024 * 1024,
      });
      if (out.status !== 0) throw new Error(`bench/sdk-python.py failed:\n${out.stderr}`);
      const figures = JSON.parse(out.stdout) as Figures;
      const rows: BenchRow[] = Object.entries(figures.calls).map(([subject, c]) => ({
        subject,
        figures: { n: c.n, 'SDK p50 ms': c.sdk_p50_ms, 'httpx p50 ms': c.httpx_p50_ms, ratio: c.ratio, 'httpx default transport p50 ms': c.httpx_default_p50_ms, 'SDK CPU µs/call': c.sdk_cpu_us, 'httpx CPU µs/call': c.httpx_cpu_us },
        goal: { text: '≤ 1.2× bare httpx', met: c.ratio <= 1.2 },
      }));
      const f = figures.file;
      if (!f) ctx.warn('the API serves no /files/raw: the 100 MiB file was not measured');
      else rows.push({
        table: 'file',
        subject: `${f.mib} MiB written and read back`,
        figures: { 'write MB/s': f.write_mb_s, 'read MB/s': f.read_mb_s, 'extra RSS MB': f.extra_rss_mb },
        goal: { text: '< 64 MB extra RSS', met: f.extra_rss_mb < 64 },
      });
      for (const row of rows) ctx.log(`  ${row.subject}: ${JSON.stringify(row.figures)}`);
      return rows;
    } finally {
      await stack.stop();
    }
  },
};
