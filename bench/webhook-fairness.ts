import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Benchmark, BenchRow } from './types.ts';
import { signUp } from './targets.ts';
import { callOk, percentile, round, startStack } from './stack.ts';

// `npm run bench -- webhook-fairness`: one account's webhook deliveries, one at a time, from its
// test event to its receiver, while quiet (the floor, in the same run), then while
// BENCH_WEBHOOK_HOGS accounts with PADDOCK_WEBHOOK_MAX_PER_ACCOUNT endpoints each, whose
// receivers never answer, have deliveries queued on every endpoint. Goal: the other account's
// p50 and p99 within 2x of quiet. Receivers are plain HTTP servers in this process on 127.0.0.1
// (PADDOCK_WEBHOOK_ALLOW_LOCAL). BENCH_WEBHOOK_PER_ACCOUNT sets PADDOCK_WEBHOOK_CONCURRENCY_PER_ACCOUNT
// (1000: no bound worth the name, to see what the bound is for).

const HOGS = Number(process.env.BENCH_WEBHOOK_HOGS ?? 3);
const ENDPOINTS = 10;
const EVENTS_PER_ENDPOINT = Number(process.env.BENCH_WEBHOOK_HOG_EVENTS ?? 5);
const SAMPLES = Number(process.env.BENCH_WEBHOOK_SAMPLES ?? 20);
const PER_ACCOUNT = process.env.BENCH_WEBHOOK_PER_ACCOUNT;
/** Longer than this and a sample counts as lost (the hogs' attempts time out at 10 s). */
const SAMPLE_GIVE_UP_MS = 30_000;

interface Receiver {
  url: string;
  server: Server;
  /** Requests being held (the hanging receiver) right now, and the most at once. */
  held(): number;
  maxHeld(): number;
  /** Resolves when a request carrying this webhook-id arrives. */
  arrival(id: string): Promise<number>;
  close(): Promise<void>;
}

async function startReceiver(hang: boolean): Promise<Receiver> {
  // An arrival may come before its request's answer does: kept until asked for.
  const arrived = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  const sockets = new Set<Socket>();
  let held = 0;
  let maxHeld = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const at = performance.now();
      const id = String(req.headers['webhook-id']);
      if (waiting.has(id)) waiting.get(id)!(at);
      else if (!hang) arrived.set(id, at);
      if (!hang) return void res.writeHead(204).end();
      held++;
      maxHeld = Math.max(maxHeld, held);
      res.on('close', () => held--);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    held: () => held,
    maxHeld: () => maxHeld,
    arrival: (id) => {
      const at = arrived.get(id);
      if (at !== undefined) return Promise.resolve(at);
      return new Promise((resolve) => waiting.set(id, resolve));
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const webhookFairnessBenchmark: Benchmark = {
  name: 'webhook-fairness',
  summary: `an account's webhook delivery latency (test event → receiver), quiet and while ${HOGS} accounts × ${ENDPOINTS} endpoints that never answer have deliveries queued; goal: within 2x of quiet`,
  async run(ctx) {
    const hang = await startReceiver(true);
    const prompt = await startReceiver(false);
    const stack = await startStack(ctx, 'webhook-fairness', {
      PADDOCK_WEBHOOK_ALLOW_LOCAL: 'true',
      PADDOCK_WEBHOOK_SECRETS_KEY: randomBytes(32).toString('hex'),
      PADDOCK_SCRYPT_LOG_N: '10', // signing up the accounts is set-up, not measured
      ...(PER_ACCOUNT ? { PADDOCK_WEBHOOK_CONCURRENCY_PER_ACCOUNT: PER_ACCOUNT } : {}),
    });
    try {
      const other = await signUp(stack.url);
      const hook = (await callOk(stack.url, other.key, 'POST', '/v1/webhooks', { url: `${prompt.url}/in` })).body as { id: string };
      let lost = 0;
      /** One test event of the other account, from its request to its arrival, one at a time. */
      const sample = async (): Promise<number[]> => {
        const times: number[] = [];
        for (let i = 0; i < SAMPLES; i++) {
          const started = performance.now();
          const res = await callOk(stack.url, other.key, 'POST', `/v1/webhooks/${hook.id}/test`);
          const id = (res.body as { id: string }).id;
          const arrived = await Promise.race([prompt.arrival(id), sleep(SAMPLE_GIVE_UP_MS).then(() => undefined)]);
          if (arrived === undefined) lost++;
          times.push((arrived ?? performance.now()) - started);
          await sleep(200);
        }
        return times;
      };
      await sample(); // warm-up: the worker's first jobs, the connection pools
      const quiet = await sample();
      ctx.log(`  quiet: p50 ${percentile(quiet, 50)} ms, p99 ${percentile(quiet, 99)} ms`);

      const hogs = await Promise.all(Array.from({ length: HOGS }, () => signUp(stack.url)));
      await Promise.all(
        hogs.map(async (hog) => {
          for (let e = 0; e < ENDPOINTS; e++) {
            const { id } = (await callOk(stack.url, hog.key, 'POST', '/v1/webhooks', { url: `${hang.url}/${e}` })).body as { id: string };
            for (let i = 0; i < EVENTS_PER_ENDPOINT; i++) await callOk(stack.url, hog.key, 'POST', `/v1/webhooks/${id}/test`);
          }
        }),
      );
      // Until the hanging deliveries stop growing: every slot they may take is taken.
      for (let last = -1, checks = 0; checks < 20 && (hang.held() === 0 || hang.held() !== last); checks++) {
        last = hang.held();
        await sleep(500);
      }
      ctx.log(`  ${hang.held()} deliveries hanging`);
      const contended = await sample();
      const hanging = hang.maxHeld();
      ctx.log(`  contended: p50 ${percentile(contended, 50)} ms, p99 ${percentile(contended, 99)} ms; at most ${hanging} hanging at once`);
      if (lost > 0) ctx.warn(`webhook-fairness: ${lost} of the other account's deliveries did not arrive within ${SAMPLE_GIVE_UP_MS / 1000} s`);
      const ratio = (p: number) => round(percentile(contended, p) / Math.max(1, percentile(quiet, p)), 2);
      const bound = PER_ACCOUNT ?? '8 (default)';
      const rows: BenchRow[] = [
        { subject: 'quiet: test event → receiver', figures: { 'p50 ms': percentile(quiet, 50), 'p99 ms': percentile(quiet, 99), 'max ms': round(Math.max(...quiet)) } },
        {
          subject: `${HOGS} accounts × ${ENDPOINTS} endpoints never answering, ${EVENTS_PER_ENDPOINT} events each; per-account bound ${bound}`,
          figures: {
            'p50 ms': percentile(contended, 50),
            'p99 ms': percentile(contended, 99),
            'max ms': round(Math.max(...contended)),
            'p50 ×quiet': ratio(50),
            'p99 ×quiet': ratio(99),
            'hanging at once': hanging,
            lost,
          },
          goal: { text: 'p50 and p99 within 2x of quiet', met: lost === 0 && ratio(50) <= 2 && ratio(99) <= 2 },
          detail: { quiet: quiet.map((t) => round(t)), contended: contended.map((t) => round(t)) },
        },
      ];
      return rows;
    } finally {
      await stack.stop();
      await Promise.all([hang.close(), prompt.close()]);
    }
  },
};
