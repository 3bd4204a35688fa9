import WebSocket from 'ws';
import type { Benchmark, BenchRow } from './types.ts';
import { mintApiKey } from './targets.ts';
import { callOk, createRunningSandbox, percentile, round, startStack } from './stack.ts';

const COUNT = Number(process.env.BENCH_TERMINAL_COUNT ?? 300);
const WARMUP = 20;

/** One keystroke in, until its echo is back: the whole path (API, spawner, the sandbox's pty) both ways. */
async function openEcho(url: string, key: string, sandboxId: string): Promise<{ keystroke(): Promise<number>; close(): void }> {
  // A program that reads every key and prints nothing, on a terminal that echoes each key as it
  // arrives (and, out of line mode, never fills a line): the echo is the only output.
  const command = ['sh', '-c', 'stty -icanon; exec cat >/dev/null'].map((w) => `command=${encodeURIComponent(w)}`).join('&');
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/sandboxes/${sandboxId}/terminal?${command}`, 'paddock.terminal.v1', {
    headers: { authorization: `Bearer ${key}` },
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`the terminal was refused: ${res.statusCode}`)));
  });
  let waiting: ((data: Buffer) => void) | undefined;
  ws.on('message', (data: Buffer) => {
    if (data[0] === 1) waiting?.(data.subarray(1));
  });
  let n = 0;
  return {
    keystroke() {
      const key = String.fromCharCode(97 + (n++ % 26));
      const started = performance.now();
      return new Promise<number>((resolve) => {
        waiting = (data) => {
          if (!data.includes(key)) return;
          waiting = undefined;
          resolve(performance.now() - started);
        };
        ws.send(Buffer.concat([Buffer.of(0), Buffer.from(key)]));
      });
    },
    close: () => ws.close(),
  };
}

export const terminalBenchmark: Benchmark = {
  name: 'terminal',
  summary: `terminal keystroke echo round trip over the WebSocket (local runtime), ${COUNT} keystrokes, against POST /exec of \`true\` in the same sandbox, interleaved`,
  async run(ctx) {
    const stack = await startStack(ctx, 'terminal');
    try {
      const key = await mintApiKey(stack.url);
      const sandbox = await createRunningSandbox(stack.url, key);
      const terminal = await openEcho(stack.url, key, sandbox.id);
      const echo: number[] = [];
      const exec: number[] = [];
      for (let i = 0; i < WARMUP + COUNT; i++) {
        const typed = await terminal.keystroke();
        const ran = await callOk(stack.url, key, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, { command: ['true'] });
        if (i < WARMUP) continue;
        echo.push(typed);
        exec.push(ran.ms);
      }
      terminal.close();
      ctx.log(`  keystroke echo p50 ${percentile(echo, 50)} ms, p99 ${percentile(echo, 99)} ms; exec true p50 ${percentile(exec, 50)} ms`);
      const rows: BenchRow[] = [
        {
          subject: 'terminal keystroke echo (WebSocket → pty → WebSocket)',
          figures: { n: echo.length, 'p50 ms': percentile(echo, 50), 'p99 ms': percentile(echo, 99) },
          detail: { samples: echo.map((v) => round(v)) },
        },
        {
          subject: 'API POST /exec true, same sandbox, same run',
          figures: { n: exec.length, 'p50 ms': percentile(exec, 50), 'p99 ms': percentile(exec, 99) },
          detail: { samples: exec.map((v) => round(v)) },
        },
      ];
      return rows;
    } finally {
      await stack.stop();
    }
  },
};
