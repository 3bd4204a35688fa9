import { readdirSync } from 'node:fs';
import { freemem } from 'node:os';
import type { Benchmark } from './types.ts';
import { mintApiKey } from './targets.ts';
import { callOk, inBatches, percentile, round, startStack, type SandboxObject } from './stack.ts';

const GOAL_MS = 10_000;
const COUNT = Number(process.env.BENCH_EXPIRY_COUNT ?? 500);
// Long enough for the worker to bring all of them up before the first one expires.
const CAP_SECONDS = Number(process.env.BENCH_EXPIRY_CAP_SECONDS ?? 60);
const PARALLEL_CREATES = 20;

export const expiryBenchmark: Benchmark = {
  name: 'expiry',
  summary: `${COUNT} sandboxes created as fast as the API takes them (?wait=false), all reaching their session cap together: lag from expiresAt to destroyedAt; goal: max < ${GOAL_MS / 1000} s`,
  async run(ctx) {
    const stack = await startStack(ctx, 'expiry', { PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS) });
    try {
      const key = await mintApiKey(stack.url);
      const list = async (state: string) =>
        ((await callOk(stack.url, key, 'GET', `/v1/sandboxes?state=${state}&limit=1000`)).body as { data: SandboxObject[] }).data;

      const started = Date.now();
      const created = await inBatches(Array.from({ length: COUNT }), PARALLEL_CREATES, async () =>
        (await callOk(stack.url, key, 'POST', '/v1/sandboxes?wait=false', {})).body as SandboxObject,
      );
      const createSeconds = (Date.now() - started) / 1000;
      const expires = created.map((s) => Date.parse(s.expiresAt));
      const firstExpiry = Math.min(...expires);
      const lastExpiry = Math.max(...expires);
      ctx.log(`  ${created.length} created (wait=false) in ${createSeconds.toFixed(1)} s; expiresAt spread ${((lastExpiry - firstExpiry) / 1000).toFixed(2)} s`);

      // Wait until all run (or the first expires), to count what is really up when they expire.
      let running = 0;
      let peakPids = 0;
      let lowestFreeMiB = Infinity;
      let allRunningAfter: number | undefined;
      while (Date.now() < firstExpiry) {
        const active = await list('active');
        running = active.filter((s) => s.status === 'running').length;
        peakPids = Math.max(peakPids, countPids());
        lowestFreeMiB = Math.min(lowestFreeMiB, freemem() / 2 ** 20);
        if (running === COUNT) {
          allRunningAfter ??= (Date.now() - started) / 1000;
        }
        const failed = active.filter((s) => s.status === 'failed').length;
        if (running + failed === COUNT && allRunningAfter !== undefined) break;
        await sleep(1000);
      }
      ctx.log(`  ${running}/${COUNT} running ${allRunningAfter === undefined ? 'when the first expired' : `after ${allRunningAfter.toFixed(1)} s`}; host pids ${peakPids}, free memory ≥ ${Math.round(lowestFreeMiB)} MiB`);

      const deadline = lastExpiry + 120_000;
      let destroyed: SandboxObject[] = [];
      while (Date.now() < deadline) {
        await sleep(Math.max(500, Math.min(5000, firstExpiry - Date.now())));
        if (Date.now() < firstExpiry) continue;
        destroyed = await list('destroyed');
        const ours = new Set(created.map((s) => s.id));
        destroyed = destroyed.filter((s) => ours.has(s.id));
        ctx.log(`  ${destroyed.length}/${COUNT} destroyed, ${round((Date.now() - firstExpiry) / 1000)} s after the first expiresAt`);
        if (destroyed.length === COUNT) break;
      }
      const lags = destroyed.map((s) => Date.parse(s.destroyedAt!) - Date.parse(s.expiresAt));
      const reasons: Record<string, number> = {};
      for (const s of destroyed) reasons[s.destroyReason ?? 'none'] = (reasons[s.destroyReason ?? 'none'] ?? 0) + 1;
      const max = lags.length ? Math.max(...lags) : NaN;
      const complete = destroyed.length === COUNT;
      if (!complete) ctx.warn(`expiry: only ${destroyed.length} of ${COUNT} sandboxes destroyed within 120 s of the last expiresAt`);
      return [
        {
          subject: `${COUNT} sandboxes, session cap ${CAP_SECONDS} s`,
          figures: {
            created: created.length,
            'create requests s': round(createSeconds),
            'running at expiry': running,
            'expiresAt spread s': round((lastExpiry - firstExpiry) / 1000, 2),
            destroyed: destroyed.length,
            'lag p50 ms': percentile(lags, 50),
            'lag p99 ms': percentile(lags, 99),
            'lag max ms': round(max),
            'last destroyed after first expiresAt s': round((Math.max(...destroyed.map((s) => Date.parse(s.destroyedAt!))) - firstExpiry) / 1000),
          },
          goal: { text: `max lag < ${GOAL_MS / 1000} s`, met: complete && max < GOAL_MS },
          detail: { reasons, peakHostPids: peakPids, lowestFreeMiB: Math.round(lowestFreeMiB), lags },
        },
      ];
    } finally {
      await stack.stop();
    }
  },
};

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Processes on the host, from /proc. */
function countPids(): number {
  try {
    return readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
  } catch {
    return 0;
  }
}
