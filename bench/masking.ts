import { randomBytes } from 'node:crypto';
import { MaskSet, SecretMasker } from '../shared/exec/masker.ts';
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
  return (
    medianMs(() => {
      for (let i = 0; i < MIB * 16; i++) work(chunks[i % chunks.length]!);
    }) / MIB
  );
}

export const maskingBenchmark: Benchmark = {
  name: 'masking',
  summary: `${SECRETS} secrets masked out of ${MIB} MiB of output in 64 KiB chunks, against copying the same chunks; a masker's build, against copying its secrets`,
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
    // Built on the event loop from the account's and the sandbox's secrets: at the default caps
    // that is up to 250 values and 640 KiB (PADDOCK_SECRETS_MAX_*). Once for a version of them:
    // an exec while they are unchanged takes the set opened then (api/services/opened-secrets.ts).
    for (const [count, bytes] of [[SECRETS, 25], [200, 2600], [16, 32 * 1024]] as const) {
      const made = () => Array.from({ length: count }, () => randomBytes(bytes).toString('base64').slice(0, bytes));
      const sets = Array.from({ length: ROUNDS }, made);
      const floor = medianMs((round) => void sets[round]!.map((v) => Buffer.from(v, 'utf8')));
      const built = medianMs((round) => void MaskSet.of(sets[round]!));
      const subject = `a masker of ${count} secrets of ${bytes} bytes`;
      ctx.log(`  ${subject}: built ${built.toFixed(2)} ms; their bytes copied ${floor.toFixed(3)} ms (×${(built / floor).toFixed(0)})`);
      rows.push({
        subject,
        figures: { 'built ms': Number(built.toFixed(2)), 'copied ms': Number(floor.toFixed(3)), 'built / copied': `×${(built / floor).toFixed(0)}` },
      });
    }
    return rows;
  },
};

/** The median of ROUNDS runs of `work`, in ms. */
function medianMs(work: (round: number) => void): number {
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    work(round);
    samples.push(performance.now() - started);
  }
  return samples.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
}
