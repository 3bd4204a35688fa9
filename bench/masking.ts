import { randomBytes } from 'node:crypto';
import { SecretMasker } from '../shared/exec/masker.ts';
import type { Benchmark, BenchRow } from './types.ts';

// Masking is on every output byte's way to its client, on the web's event loop. Its floor is the
// copy the output takes there anyway. Printed, not held to a goal: no issue sets one; the figures
// show what a change to the masker costs, also on text made of the secrets' beginnings (its
// worst case: every byte may begin one).

const SECRETS = 100;
const CHUNK_BYTES = 64 * 1024;
const MIB = Number(process.env.BENCH_MASKING_MIB ?? 64);
const ROUNDS = 5;

function timePerMiB(chunks: Buffer[], work: (chunk: Buffer) => void): number {
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    for (let i = 0; i < MIB * 16; i++) work(chunks[i % chunks.length]!);
    samples.push((performance.now() - started) / MIB);
  }
  return samples.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
}

export const maskingBenchmark: Benchmark = {
  name: 'masking',
  summary: `${SECRETS} secrets masked out of ${MIB} MiB of output in 64 KiB chunks, against copying the same chunks`,
  async run(ctx) {
    const secrets = Array.from({ length: SECRETS }, (_, i) => `s3cr3t-${i}-${randomBytes(12).toString('hex')}`);
    const inputs: Record<string, Buffer[]> = {
      'bytes that begin no secret (x)': [Buffer.alloc(CHUNK_BYTES, 'x')],
      'text full of the secrets\' beginnings': [Buffer.from('s3cr3t-s3cr3t-s3cr\n'.repeat(Math.ceil(CHUNK_BYTES / 19)).slice(0, CHUNK_BYTES))],
      'text with a secret every 4 KiB': [
        Buffer.from(Array.from({ length: CHUNK_BYTES / 4096 }, (_, i) => secrets[i % SECRETS]!.padEnd(4096, ' lorem ipsum')).join('')),
      ],
    };
    const rows: BenchRow[] = [];
    for (const [subject, chunks] of Object.entries(inputs)) {
      const floor = timePerMiB(chunks, (chunk) => void Buffer.from(chunk));
      const masker = new SecretMasker(secrets);
      const masked = timePerMiB(chunks, (chunk) => void masker.push(chunk));
      const ratio = masked / floor;
      ctx.log(`  ${subject}: ${masked.toFixed(2)} ms/MiB masked, ${floor.toFixed(3)} ms/MiB copied (×${ratio.toFixed(1)})`);
      rows.push({
        subject,
        figures: { 'masked ms/MiB': Number(masked.toFixed(2)), 'copied ms/MiB': Number(floor.toFixed(3)), 'masked / copied': `×${ratio.toFixed(1)}` },
      });
    }
    return rows;
  },
};
