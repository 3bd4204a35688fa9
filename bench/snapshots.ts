import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PaddockClient } from '../shared/sdk/index.ts';
import { ProcessSampler, rssOf } from './paddock-processes.ts';
import { callOk, createRunningSandbox, localRuntimeOn, round, startStack } from './stack.ts';
import { mintApiKey } from './targets.ts';
import type { Benchmark, BenchRow } from './types.ts';

// Snapshots (docs/api.md, "Snapshots") against their floors in the same run: a snapshot of a
// workspace against the host's `tar | zstd` of the same tree into a file; a create from it against
// a cold create plus the raw extract of the same tree (uncompressed, from this process, through
// the runtime's exec); the peak RSS each Paddock process gains meanwhile.

const TREE_MB = Number(process.env.BENCH_SNAPSHOT_MB ?? 256);
const ROUNDS = Number(process.env.BENCH_SNAPSHOT_ROUNDS ?? 3);
const MB = 1024 * 1024;
const RATIO_GOAL = 1.5;
const RSS_GOAL_MB = 64;
const SOURCE = resolve(import.meta.dirname, '../node_modules/typescript');

/** Half source text (copies of TypeScript's package), half incompressible binaries of 1 MiB. */
function makeTree(): { dir: string; bytes: number } {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-snapshot-'));
  let bytes = 0;
  for (let copy = 0; bytes < (TREE_MB / 2) * MB; copy++) {
    cpSync(SOURCE, join(dir, `src-${copy}`), { recursive: true });
    bytes = sizeOf(dir);
  }
  mkdirSync(join(dir, 'bin'));
  for (let i = 0; bytes < TREE_MB * MB; i++, bytes += MB) writeFileSync(join(dir, 'bin', `blob-${i}.bin`), randomBytes(MB));
  return { dir, bytes };
}

function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  }
  return total;
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('error', fail);
    child.once('close', (code) => (code === 0 ? done() : fail(new Error(`${command} exited ${String(code)}`))));
  });
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

const median = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;

export const snapshotsBenchmark: Benchmark = {
  name: 'snapshots',
  summary:
    `a snapshot of a ${TREE_MB} MiB workspace (source and binaries) against the host's tar | zstd of the same tree (goal ≤ ${RATIO_GOAL}×); ` +
    `a create from it against a cold create plus the raw extract (goal ≤ ${RATIO_GOAL}×); peak RSS gained by each Paddock process (goal < ${RSS_GOAL_MB} MB)`,
  async run(ctx) {
    const stack = await startStack(ctx, 'snapshots', { PADDOCK_QUOTA_SNAPSHOT_BYTES: String(1024 * 1024 * MB), PADDOCK_ARCHIVE_MAX_BYTES: String(2048 * MB) });
    const runtime = localRuntimeOn(stack.dataDir);
    const tree = makeTree();
    const scratch = mkdtempSync(join(tmpdir(), 'paddock-bench-zstd-'));
    try {
      const key = await mintApiKey(stack.url);
      const client = new PaddockClient({ baseUrl: stack.url, apiKey: key });
      const source = await createRunningSandbox(stack.url, key);
      const tar = spawn('tar', ['-c', '-f', '-', '-C', tree.dir, '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
      await client.uploadArchive(source.id, { path: '/workspace', archive: tar.stdout });
      ctx.log(`  a workspace of ${round(tree.bytes / MB)} MiB uploaded`);

      // A create first, so that what any create costs the worker once (its runtime's start) is in the baseline.
      const warm = await createRunningSandbox(stack.url, key);
      await callOk(stack.url, key, 'DELETE', `/v1/sandboxes/${warm.id}`);
      const sampler = new ProcessSampler(stack);
      const baseline = new Map([...sampler.sample()].map(([name, pid]) => [name, rssOf(pid) ?? 0]));
      const floors = { take: [] as number[], restore: [] as number[] };
      const paddock = { take: [] as number[], restore: [] as number[] };
      let sizeBytes = 0;
      for (let round_ = 0; round_ < ROUNDS; round_++) {
        const out = join(scratch, `tree-${round_}.tar.zst`);
        floors.take.push((await timed(() => run('sh', ['-c', `tar -c -f - -C '${tree.dir}' . | zstd -3 -q -o '${out}'`]))).ms);
        rmSync(out, { force: true });
        const taken = await timed(() => callOk(stack.url, key, 'POST', `/v1/sandboxes/${source.id}/snapshots`, {}));
        const snapshot = taken.value.body as { id: string; sizeBytes: number };
        paddock.take.push(taken.ms);
        sizeBytes = snapshot.sizeBytes;

        // The floor of a create from it: a cold create, then the tree's raw tar into its workspace.
        const cold = await timed(() => createRunningSandbox(stack.url, key));
        const extract = await timed(async () => {
          const stream = spawn('tar', ['-c', '-f', '-', '-C', tree.dir, '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
          const result = await runtime.exec(cold.value.id, { argv: ['tar', '-x', '-f', '-', '-C', '/workspace'], timeoutMs: 600_000, stdin: stream.stdout });
          if (result.exitCode !== 0) throw new Error(`the raw extract exited ${String(result.exitCode)}`);
        });
        floors.restore.push(cold.ms + extract.ms);
        const restored = await timed(() => callOk(stack.url, key, 'POST', '/v1/sandboxes', { snapshot: snapshot.id }));
        if ((restored.value.body as { status: string }).status !== 'running') throw new Error(`the create from the snapshot answered ${JSON.stringify(restored.value.body)}`);
        paddock.restore.push(restored.ms);
        for (const id of [cold.value.id, (restored.value.body as { id: string }).id]) await callOk(stack.url, key, 'DELETE', `/v1/sandboxes/${id}`);
        await callOk(stack.url, key, 'DELETE', `/v1/snapshots/${snapshot.id}`);
      }
      sampler.stop();
      const gained = [...sampler.peakRss].map(([name, peak]) => [name, round((peak - (baseline.get(name) ?? 0)) / MB)] as const);
      const worstGain = Math.max(0, ...gained.map(([, mb]) => mb));
      const takeRatio = median(paddock.take) / median(floors.take);
      const restoreRatio = median(paddock.restore) / median(floors.restore);
      ctx.log(`  snapshot: ${round(median(paddock.take))} ms against tar | zstd ${round(median(floors.take))} ms (×${takeRatio.toFixed(2)}), ${round(sizeBytes / MB)} MiB stored`);
      ctx.log(`  create from it: ${round(median(paddock.restore))} ms against a cold create plus the raw extract ${round(median(floors.restore))} ms (×${restoreRatio.toFixed(2)})`);
      ctx.log(`  peak RSS gained: ${gained.map(([name, mb]) => `${name} ${mb} MB`).join(', ')}`);
      const rows: BenchRow[] = [
        { subject: `floor: tar -c | zstd -3 of the ${round(tree.bytes / MB)} MiB tree on the host, into a file`, figures: { n: ROUNDS, 'median ms': round(median(floors.take)) }, detail: { samples: floors.take.map(round) } },
        {
          subject: 'POST /v1/sandboxes/{id}/snapshots of that workspace',
          figures: { n: ROUNDS, 'median ms': round(median(paddock.take)), 'over the floor': `×${takeRatio.toFixed(2)}`, 'stored MiB': round(sizeBytes / MB) },
          goal: { text: `≤ ${RATIO_GOAL}× the floor`, met: takeRatio <= RATIO_GOAL },
          detail: { samples: paddock.take.map(round) },
        },
        { subject: 'floor: a cold POST /v1/sandboxes, then the raw tar extracted into it through runtime.exec', figures: { n: ROUNDS, 'median ms': round(median(floors.restore)) }, detail: { samples: floors.restore.map(round) } },
        {
          subject: 'POST /v1/sandboxes {snapshot}, until running',
          figures: { n: ROUNDS, 'median ms': round(median(paddock.restore)), 'over the floor': `×${restoreRatio.toFixed(2)}` },
          goal: { text: `≤ ${RATIO_GOAL}× the floor`, met: restoreRatio <= RATIO_GOAL },
          detail: { samples: paddock.restore.map(round) },
        },
        {
          subject: 'peak RSS gained by each Paddock process while snapshots were taken and restored',
          figures: Object.fromEntries(gained.map(([name, mb]) => [`${name} MB`, mb])),
          goal: { text: `< ${RSS_GOAL_MB} MB each`, met: worstGain < RSS_GOAL_MB },
        },
      ];
      return rows;
    } finally {
      rmSync(tree.dir, { recursive: true, force: true });
      rmSync(scratch, { recursive: true, force: true });
      await runtime.close();
      await stack.stop();
    }
  },
};
