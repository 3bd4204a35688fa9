import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PaddockClient } from '../shared/sdk/index.ts';
import { ProcessSampler } from './paddock-processes.ts';
import { createRunningSandbox, round, startStack } from './stack.ts';
import { mintApiKey } from './targets.ts';
import type { Benchmark, BenchRow } from './types.ts';

// Archive throughput: a 256 MiB tree of many files uploaded into a sandbox and
// downloaded back through the API, against the host's own `tar c | tar x` of the same tree in the
// same run, with the peak RSS of each Paddock process while it ran.

const TREE_MB = Number(process.env.BENCH_ARCHIVE_MB ?? 256);
const FILE_KB = 128;
const ROUNDS = Number(process.env.BENCH_ARCHIVE_ROUNDS ?? 2);
const MB = 1024 * 1024;

/** TREE_MB of incompressible files of FILE_KB, 64 to a directory. */
function makeTree(): { dir: string; bytes: number; files: number } {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-tree-'));
  const files = Math.round((TREE_MB * 1024) / FILE_KB);
  for (let i = 0; i < files; i++) {
    const sub = join(dir, `d${Math.floor(i / 64)}`);
    if (i % 64 === 0) mkdirSync(sub);
    writeFileSync(join(sub, `f${i}.bin`), randomBytes(FILE_KB * 1024));
  }
  return { dir, bytes: files * FILE_KB * 1024, files };
}

function exited(child: ReturnType<typeof spawn>, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${what} exited ${String(code)}`))));
  });
}

/** The host's own copy of the tree: tar c piped into tar x, as the API's path is tar to tar. */
async function hostCopy(tree: string, into: string): Promise<number> {
  const started = performance.now();
  const create = spawn('tar', ['-c', '-f', '-', '-C', tree, '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const extract = spawn('tar', ['-x', '-f', '-', '-C', into], { stdio: ['pipe', 'ignore', 'inherit'] });
  create.stdout.pipe(extract.stdin);
  await Promise.all([exited(create, 'tar -c'), exited(extract, 'tar -x')]);
  return performance.now() - started;
}

async function upload(client: PaddockClient, id: string, tree: string, path: string): Promise<number> {
  const started = performance.now();
  const create = spawn('tar', ['-c', '-f', '-', '-C', tree, '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const done = exited(create, 'tar -c');
  await client.uploadArchive(id, { path, archive: create.stdout });
  await done;
  return performance.now() - started;
}

async function download(client: PaddockClient, id: string, path: string, into: string): Promise<number> {
  const started = performance.now();
  const extract = spawn('tar', ['-x', '-f', '-', '-C', into], { stdio: ['pipe', 'ignore', 'inherit'] });
  const done = exited(extract, 'tar -x');
  // tar stops reading at the archive's end marker, before the zeros that pad its last record.
  await pipeline(client.downloadArchive(id, { path }), extract.stdin as Writable).catch(() => undefined);
  await done;
  return performance.now() - started;
}

const mbps = (bytes: number, ms: number) => round(bytes / MB / (ms / 1000));

export const archivesBenchmark: Benchmark = {
  name: 'archives',
  summary: `upload and download (files/archive, tar) of a ${TREE_MB} MiB tree of ${FILE_KB} KiB files, against the host's tar c | tar x, with peak RSS`,
  async run(ctx) {
    const tree = makeTree();
    const scratch = mkdtempSync(join(tmpdir(), 'paddock-bench-out-'));
    // The sandbox holds the tree once per round: its disk is sized for it.
    const stack = await startStack(ctx, 'archives', { PADDOCK_LOCAL_DISK_MB: String(TREE_MB * (ROUNDS + 1) + 512), PADDOCK_LOCAL_MEMORY_MB: '512' });
    try {
      const key = await mintApiKey(stack.url);
      const sandbox = await createRunningSandbox(stack.url, key);
      const client = new PaddockClient({ baseUrl: stack.url, apiKey: key });
      // A first exec starts the web's spawner, so its memory is sampled from the baseline on.
      await client.exec(sandbox.id, { command: ['true'] });
      const sampler = new ProcessSampler(stack);
      const baseline = new Map(sampler.peakRss);
      const times = { host: [] as number[], upload: [] as number[], download: [] as number[] };
      for (let r = 0; r < ROUNDS; r++) {
        const hostInto = join(scratch, `host-${r}`);
        mkdirSync(hostInto);
        times.host.push(await hostCopy(tree.dir, hostInto));
        rmSync(hostInto, { recursive: true, force: true });
        times.upload.push(await upload(client, sandbox.id, tree.dir, `/workspace/tree-${r}`));
        const back = join(scratch, `back-${r}`);
        mkdirSync(back);
        times.download.push(await download(client, sandbox.id, `/workspace/tree-${r}`, back));
        rmSync(back, { recursive: true, force: true });
        ctx.log(`  round ${r + 1}: host ${mbps(tree.bytes, times.host[r]!)} MB/s, upload ${mbps(tree.bytes, times.upload[r]!)} MB/s, download ${mbps(tree.bytes, times.download[r]!)} MB/s`);
      }
      sampler.stop();
      const best = (xs: number[]) => Math.min(...xs);
      const rows: BenchRow[] = [
        { subject: `host: tar -c piped to tar -x, ${TREE_MB} MiB, ${tree.files} files`, figures: { 'MB/s': mbps(tree.bytes, best(times.host)), 'best s': round(best(times.host) / 1000) } },
        { subject: 'upload (PUT files/archive)', figures: { 'MB/s': mbps(tree.bytes, best(times.upload)), 'best s': round(best(times.upload) / 1000) } },
        { subject: 'download (GET files/archive)', figures: { 'MB/s': mbps(tree.bytes, best(times.download)), 'best s': round(best(times.download) / 1000) } },
      ];
      for (const [name, peak] of sampler.peakRss) {
        const before = baseline.get(name) ?? 0;
        rows.push({
          table: 'peak RSS during the transfers',
          subject: name,
          figures: { 'baseline MB': round(before / MB), 'peak MB': round(peak / MB), 'extra MB': round((peak - before) / MB) },
          goal: { text: 'under 64 MB extra', met: peak - before < 64 * MB },
        });
      }
      for (const row of rows) row.detail ??= { times: { host: times.host.map(round), upload: times.upload.map(round), download: times.download.map(round) } };
      return rows;
    } finally {
      await stack.stop();
      rmSync(tree.dir, { recursive: true, force: true });
      rmSync(scratch, { recursive: true, force: true });
    }
  },
};
