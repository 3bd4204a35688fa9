import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { paddockProcesses } from './paddock-processes.ts';
import { call, callOk, createRunningSandbox, percentile, round, startStack } from './stack.ts';

// `npm run bench -- bulk-fairness`: one account's bulk downloads against another account's work
// on the same web. Account B (the neighbour) downloads a BENCH_BULK_MB file as a tar archive
// (GET files/archive) and reads a small file (GET files, the interactive kind of request), quiet
// (the floor, in the same run) and while account A downloads its own file over
// BENCH_BULK_HOG_STREAMS archive downloads at once, back to back: BENCH_BULK_ROUNDS rounds, the
// two phases alternated so that the machine's drift hits them alike. Goal: B's download
// throughput, and the p50 of its API reads made meanwhile, within 2x of quiet. Beside them: its
// small file reads (a script in its sandbox, after its downloads: A alone then), A's own
// throughput, alone and under contention (a lone account is not held to a low fixed rate), and
// the CPU of the web and its command spawner in each phase.

const FILE_MB = Number(process.env.BENCH_BULK_MB ?? 64);
const HOG_STREAMS = Number(process.env.BENCH_BULK_HOG_STREAMS ?? 4);
const DOWNLOADS = Number(process.env.BENCH_BULK_DOWNLOADS ?? 2);
const READS = Number(process.env.BENCH_BULK_READS ?? 20);
const ROUNDS = Number(process.env.BENCH_BULK_ROUNDS ?? 5);
// BENCH_BULK_TURN_MS=0: the same run without the fair share (PADDOCK_BULK_TURN_MS=0), to compare with.
const TURN_MS = process.env.BENCH_BULK_TURN_MS;
const MB = 1024 * 1024;

/** The web's CPU seconds so far (user + system), from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** One archive download, its bytes counted and dropped; answers the bytes and the milliseconds. */
function download(baseUrl: string, key: string, sandboxId: string, path: string, onBytes?: (n: number) => void): Promise<{ bytes: number; ms: number }> {
  const started = performance.now();
  const url = new URL(`/v1/sandboxes/${sandboxId}/files/archive?path=${encodeURIComponent(path)}`, baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${key}`, accept: 'application/x-tar' } }, (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`archive download answered ${res.statusCode}`));
      }
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        onBytes?.(chunk.length);
      });
      res.on('end', () => resolve({ bytes, ms: performance.now() - started }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const mbps = (bytes: number, ms: number) => round(bytes / MB / (ms / 1000));

interface Account {
  key: string;
  sandboxId: string;
}

async function prepare(baseUrl: string): Promise<Account> {
  const key = await mintApiKey(baseUrl);
  const { id } = await createRunningSandbox(baseUrl, key);
  // Incompressible, so that no hop's work depends on the contents.
  await callOk(baseUrl, key, 'POST', `/v1/sandboxes/${id}/exec`, { command: ['sh', '-c', `head -c ${FILE_MB}M /dev/urandom > /workspace/blob && echo hi > /workspace/small.txt`] });
  return { key, sandboxId: id };
}

/**
 * The neighbour's figures for one phase: its downloads one after another, with its API reads
 * (`GET /v1/sandboxes/{id}`, 50 ms apart) going on meanwhile; then its small file reads (GET
 * files: a script run in its sandbox), one after another.
 */
async function neighbour(baseUrl: string, b: Account): Promise<{ downloadMbps: number[]; getMs: number[]; readMs: number[] }> {
  const downloadMbps: number[] = [];
  const getMs: number[] = [];
  let downloading = true;
  const probe = (async () => {
    while (downloading) {
      const res = await call(baseUrl, b.key, 'GET', `/v1/sandboxes/${b.sandboxId}`);
      if (res.status !== 200) throw new Error(`GET answered ${res.status}`);
      getMs.push(res.ms);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  try {
    for (let i = 0; i < DOWNLOADS; i++) {
      const { bytes, ms } = await download(baseUrl, b.key, b.sandboxId, '/workspace/blob');
      downloadMbps.push(mbps(bytes, ms));
    }
  } finally {
    downloading = false;
    await probe;
  }
  const readMs: number[] = [];
  for (let i = 0; i < READS; i++) {
    const res = await call(baseUrl, b.key, 'GET', `/v1/sandboxes/${b.sandboxId}/files?path=/workspace/small.txt`);
    if (res.status !== 200) throw new Error(`small read answered ${res.status}`);
    readMs.push(res.ms);
  }
  return { downloadMbps, getMs, readMs };
}

/** A's streams, downloading back to back until stopped; answers the bytes they moved. */
function hog(baseUrl: string, a: Account): { stop(): Promise<{ bytes: number; ms: number }> } {
  let stopping = false;
  let bytes = 0;
  const started = performance.now();
  const lanes = Array.from({ length: HOG_STREAMS }, async () => {
    while (!stopping) await download(baseUrl, a.key, a.sandboxId, '/workspace/blob', (n) => (bytes += n));
  });
  return {
    async stop() {
      stopping = true;
      const ms = performance.now() - started;
      const moved = bytes;
      await Promise.all(lanes);
      return { bytes: moved, ms };
    },
  };
}

const median = (xs: number[]) => percentile(xs, 50);

export const bulkFairnessBenchmark: Benchmark = {
  name: 'bulk-fairness',
  summary: `a neighbour's ${FILE_MB} MiB archive downloads and small reads, quiet and while another account runs ${HOG_STREAMS} archive downloads at once; goal: within 2x of quiet`,
  async run(ctx) {
    const stack = await startStack(ctx, 'bulk-fairness', {
      PADDOCK_LOCAL_DISK_MB: String(FILE_MB + 256),
      ...(TURN_MS !== undefined ? { PADDOCK_BULK_TURN_MS: TURN_MS } : {}),
    });
    try {
      const [a, b] = [await prepare(stack.url), await prepare(stack.url)];
      await neighbour(stack.url, b); // warm-up: the spawner, the JIT, the pools
      // The web and its command spawner: every byte of every transfer crosses both.
      const spawnerPid = paddockProcesses(stack).get('web spawner');
      const processCpu = () => cpuSeconds(stack.webPid) + (spawnerPid ? cpuSeconds(spawnerPid) : 0);
      const cpuShare = async <T>(work: () => Promise<T>): Promise<[T, number]> => {
        const cpu = processCpu();
        const at = performance.now();
        const result = await work();
        return [result, round(((processCpu() - cpu) / ((performance.now() - at) / 1000)) * 100)];
      };

      const quiet = { downloadMbps: [] as number[], getMs: [] as number[], readMs: [] as number[], cpu: [] as number[] };
      const contended = { downloadMbps: [] as number[], getMs: [] as number[], readMs: [] as number[], cpu: [] as number[], hogMbps: [] as number[] };
      const alone: number[] = [];
      const aloneCpu: number[] = [];
      // Each round's contended figure against its own quiet one, a few seconds apart: the machine's
      // drift between rounds (other work on a shared host) cancels out of the ratio.
      const ratios = { download: [] as number[], get: [] as number[], read: [] as number[] };
      for (let r = 0; r < ROUNDS; r++) {
        const [q, qCpu] = await cpuShare(() => neighbour(stack.url, b));
        quiet.downloadMbps.push(...q.downloadMbps);
        quiet.getMs.push(...q.getMs);
        quiet.readMs.push(...q.readMs);
        quiet.cpu.push(qCpu);
        const [lone, loneCpu] = await cpuShare(async () => {
          const running = hog(stack.url, a);
          await new Promise((resolve) => setTimeout(resolve, 3000));
          return running.stop();
        });
        alone.push(mbps(lone.bytes, lone.ms));
        aloneCpu.push(loneCpu);
        const running = hog(stack.url, a);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const [c, cCpu] = await cpuShare(() => neighbour(stack.url, b));
        const moved = await running.stop();
        contended.downloadMbps.push(...c.downloadMbps);
        contended.getMs.push(...c.getMs);
        contended.readMs.push(...c.readMs);
        contended.cpu.push(cCpu);
        contended.hogMbps.push(mbps(moved.bytes, moved.ms));
        ratios.download.push(median(q.downloadMbps) / Math.max(0.001, median(c.downloadMbps)));
        ratios.get.push(median(c.getMs) / Math.max(0.001, median(q.getMs)));
        ratios.read.push(median(c.readMs) / Math.max(0.001, median(q.readMs)));
        ctx.log(
          `  round ${r + 1}: quiet ${median(q.downloadMbps)} MB/s, GET p50 ${median(q.getMs)} ms, read p50 ${median(q.readMs)} ms; A alone ${alone.at(-1)} MB/s; ` +
            `contended ${median(c.downloadMbps)} MB/s, GET p50 ${median(c.getMs)} ms, read p50 ${median(c.readMs)} ms, A ${contended.hogMbps.at(-1)} MB/s`,
        );
      }

      const throughputRatio = round(median(ratios.download), 2);
      const getRatio = round(median(ratios.get), 2);
      const readRatio = round(median(ratios.read), 2);
      const turn = TURN_MS ?? '1000 (default)';
      const figures = (phase: typeof quiet) => ({
        'download MB/s': median(phase.downloadMbps),
        'GET p50 ms': median(phase.getMs),
        'GET p99 ms': percentile(phase.getMs, 99),
        'file read p50 ms': median(phase.readMs),
        'web+spawner CPU %': median(phase.cpu),
      });
      const rows: BenchRow[] = [
        { subject: `neighbour quiet: ${FILE_MB} MiB archive downloads, GET meanwhile; file reads`, figures: figures(quiet) },
        { subject: `account A alone, ${HOG_STREAMS} archive downloads at once`, figures: { 'A MB/s': median(alone), 'web+spawner CPU %': median(aloneCpu) } },
        {
          subject: `neighbour while A runs ${HOG_STREAMS} archive downloads at once; PADDOCK_BULK_TURN_MS ${turn}`,
          figures: {
            ...figures(contended),
            'A MB/s': median(contended.hogMbps),
            // Medians of each round's ratio to its own quiet phase.
            'download ×quiet': throughputRatio,
            'GET p50 ×quiet': getRatio,
            'file read p50 ×quiet': readRatio,
          },
          goal: { text: 'download throughput and GET p50 within 2x of quiet', met: throughputRatio <= 2 && getRatio <= 2 },
          detail: { quiet, contended, alone, ratios },
        },
      ];
      return rows;
    } finally {
      await stack.stop();
    }
  },
};
