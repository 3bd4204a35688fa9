import { Sandbox } from '../shared/sdk/index.ts';

// One phase of bench/sdk-ts.ts's file figures, in a process of its own so that no phase starts
// on memory another left: `node bench/sdk-ts-memory.ts write|read|fetch-read`, the stack's URL,
// the key and the sandbox in PADDOCK_BENCH_URL, PADDOCK_BENCH_KEY and PADDOCK_BENCH_SANDBOX.
// Prints {seconds, extraMb}: the peak RSS, sampled every 20 ms, over the RSS before the phase.

export const FILE_MIB = 100;
const PATH = 'big.bin';

async function main(phase: string): Promise<void> {
  const url = process.env.PADDOCK_BENCH_URL!;
  const key = process.env.PADDOCK_BENCH_KEY!;
  const id = process.env.PADDOCK_BENCH_SANDBOX!;
  const sbx = await Sandbox.connect(id, { apiKey: key, baseUrl: url });
  const chunk = new Uint8Array(1024 * 1024).fill(97);
  async function* body() {
    for (let i = 0; i < FILE_MIB; i++) yield chunk;
  }
  const readAll = async (stream: AsyncIterable<Uint8Array>) => {
    let read = 0;
    for await (const part of stream) read += part.byteLength;
    if (read !== FILE_MIB * 1024 * 1024) throw new Error(`read back ${read} bytes of ${FILE_MIB} MiB`);
  };
  const phases: Record<string, () => Promise<void>> = {
    write: async () => void (await sbx.files.write(PATH, body())),
    read: async () => readAll((await sbx.files.readStream(PATH)) as unknown as AsyncIterable<Uint8Array>),
    'fetch-read': async () => {
      const res = await fetch(`${url}/v1/sandboxes/${id}/files/raw?path=${PATH}`, { headers: { authorization: `Bearer ${key}` } });
      await readAll(res.body as unknown as AsyncIterable<Uint8Array>);
    },
  };
  const work = phases[phase];
  if (!work) throw new Error(`no phase ${phase}`);
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const t0 = performance.now();
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  peak = Math.max(peak, process.memoryUsage().rss);
  process.stdout.write(`${JSON.stringify({ seconds: (performance.now() - t0) / 1000, extraMb: (peak - before) / 1e6 })}\n`);
}

if (import.meta.main) await main(process.argv[2] ?? '');
