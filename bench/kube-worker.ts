import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { callOk, inBatches, median, round, startStack } from './stack.ts';
import { startStandinFixture } from '../test/k8s-standin/fixture.ts';
import { createSandboxQueue } from '../shared/jobs/catalogue.ts';

// One worker on the Kubernetes runtime, against the API stand-in (test/k8s-standin: Kubernetes'
// own wire protocol, a real bubblewrap sandbox behind each pod): how many sandboxes a minute it
// brings up when the cluster starts pods at once, and what it does while the cluster is slow to
// (each pod's start held BENCH_KUBE_SLOW_MS, as a busy scheduler or a slow image pull would):
// sampled every half second, the jobs it runs at once, those waiting in Redis, and the pods.

const CREATES = Number(process.env.BENCH_KUBE_CREATES ?? 60);
const SLOW_MS = Number(process.env.BENCH_KUBE_SLOW_MS ?? 5000);
const CONCURRENCY = 20;
const SAMPLE_MS = 500;

interface Phase {
  /** Seconds from the first create's request until every sandbox ran. */
  seconds: number;
  perMinute: number;
  /** The most jobs active at once, and waiting at once, in the samples. */
  activeMax: number;
  waitingMax: number;
  /** The most pods the stand-in held pending at once (created, not yet running). */
  pendingMax: number;
  /** Each create's time from its request to its sandbox running, ms. */
  readyMs: number[];
}

export const kubeWorkerBenchmark: Benchmark = {
  name: 'kube-worker',
  summary: `one worker (concurrency ${CONCURRENCY}) on the Kubernetes runtime against the API stand-in: ${CREATES} creates sent at once (?wait=false) with pods starting at once, then with each pod's start held ${SLOW_MS} ms; creates a minute, and the jobs active and waiting meanwhile`,
  async run(ctx) {
    const fixture = await startStandinFixture();
    const kubeDir = mkdtempSync(join(tmpdir(), 'paddock-bench-kube-'));
    const kubeconfig = join(kubeDir, 'config');
    writeFileSync(kubeconfig, fixture.standin.kubeConfig.exportConfig(), { mode: 0o600 });
    const env = {
      PADDOCK_RUNTIME: 'kubernetes',
      KUBECONFIG: kubeconfig,
      PADDOCK_WORKER_CONCURRENCY: String(CONCURRENCY),
      PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS: '600',
    };
    const stack = await startStack(ctx, 'kube-worker', env, { webs: 1, workers: 1 });
    const db = new pg.Pool({ connectionString: ctx.databaseUrl, max: 2 });
    const redis = new Redis(ctx.redisUrl, { maxRetriesPerRequest: null });
    const queue = createSandboxQueue(redis, stack.deployment);
    try {
      const key = await mintApiKey(stack.url);
      const phase = async (label: string, delayMs: number): Promise<Phase> => {
        fixture.backend.createDelayMs = delayMs;
        const samples: { active: number; waiting: number; pending: number }[] = [];
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            const counts = await queue.getJobCounts('active', 'waiting', 'prioritized');
            const pending = await db.query<{ n: number }>("select count(*)::int as n from sandboxes where state = 'active' and status = 'pending' and deployment = $1", [stack.deployment]).catch(() => ({ rows: [{ n: NaN }] }));
            samples.push({ active: counts.active ?? 0, waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0), pending: pending.rows[0]?.n ?? 0 });
            await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
          }
        })();
        const t0 = performance.now();
        const sent = await inBatches(Array.from({ length: CREATES }), 20, async () => {
          const started = performance.now();
          const res = await callOk(stack.url, key, 'POST', '/v1/sandboxes?wait=false', {});
          return { id: (res.body as { id: string }).id, started };
        });
        const readyMs: number[] = [];
        const waiting = new Set(sent.map((s) => s.id));
        while (waiting.size > 0) {
          const { rows } = await db.query<{ id: string; status: string }>('select id, status from sandboxes where id = any($1)', [[...waiting]]);
          for (const row of rows) {
            if (row.status === 'pending') continue;
            if (row.status !== 'running') throw new Error(`${label}: sandbox ${row.id} ended ${row.status}`);
            waiting.delete(row.id);
            readyMs.push(performance.now() - sent.find((s) => s.id === row.id)!.started);
          }
          if (performance.now() - t0 > 600_000) throw new Error(`${label}: ${waiting.size} sandboxes not running after 10 minutes`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const seconds = (performance.now() - t0) / 1000;
        sampling = false;
        await sampler;
        await inBatches(sent, 20, (s) => callOk(stack.url, key, 'DELETE', `/v1/sandboxes/${s.id}`));
        const result: Phase = {
          seconds,
          perMinute: (CREATES / seconds) * 60,
          activeMax: Math.max(0, ...samples.map((s) => s.active)),
          waitingMax: Math.max(0, ...samples.map((s) => s.waiting)),
          pendingMax: Math.max(0, ...samples.map((s) => s.pending)),
          readyMs,
        };
        ctx.log(
          `  ${label}: ${CREATES} running in ${seconds.toFixed(1)} s (${result.perMinute.toFixed(0)} a minute); at most ${result.activeMax} jobs active, ${result.waitingMax} waiting, ${result.pendingMax} sandboxes pending`,
        );
        return result;
      };
      const fast = await phase('pods start at once', 0);
      const slow = await phase(`each pod's start held ${SLOW_MS} ms`, SLOW_MS);
      const row = (subject: string, p: Phase): BenchRow => ({
        subject,
        figures: {
          creates: CREATES,
          's until all ran': round(p.seconds),
          'creates a minute': Math.round(p.perMinute),
          'ready p50 ms': Math.round(median(p.readyMs)),
          'jobs active, most': p.activeMax,
          'jobs waiting, most': p.waitingMax,
          'pending, most': p.pendingMax,
        },
      });
      return [row('one worker, pods starting at once', fast), row(`one worker, each pod's start held ${SLOW_MS} ms`, slow)];
    } finally {
      await queue.close();
      redis.disconnect();
      await db.end();
      await stack.stop();
      await fixture.close();
      rmSync(kubeDir, { recursive: true, force: true });
    }
  },
};
