import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { Benchmark } from './types.ts';
import { signUp } from './targets.ts';
import { callOk, inBatches, percentile, round, startStack, type SandboxObject } from './stack.ts';

// `npm run bench -- events`: BENCH_EVENTS_COUNT accounts, each with one webhook endpoint and one
// sandbox, all reaching their session cap together. Measured: from each sandbox's transition
// (destroyedAt, and the sandbox.expiring event's time) to the receiver's 2xx, and beside it, in
// the same run, the reaper's lag (destroyedAt − expiresAt): the webhooks must not slow the reaper.
// The receiver is a plain HTTP server in this process on 127.0.0.1, allowed by the development
// setting PADDOCK_WEBHOOK_ALLOW_LOCAL (https to a public address needs a certificate the workers
// trust; the delivery path is the same but for TLS).

const COUNT = Number(process.env.BENCH_EVENTS_COUNT ?? 500);
const CAP_SECONDS = Number(process.env.BENCH_EVENTS_CAP_SECONDS ?? 90);
const WARNING_SECONDS = Number(process.env.BENCH_EVENTS_WARNING_SECONDS ?? 20);
// BENCH_EVENTS_WEBHOOKS=0: the same run without any endpoint, for the reaper lag to compare with.
const WEBHOOKS = process.env.BENCH_EVENTS_WEBHOOKS !== '0';
const PARALLEL = 20;
const GOAL_P99_MS = 5000;

interface Received {
  id: string;
  type: string;
  sandboxId?: string;
  at: number;
}

export const eventsBenchmark: Benchmark = {
  name: 'events',
  summary: `${COUNT} sandboxes, one webhook endpoint each, expiring together: transition → receiver 2xx (p50/p99), and the reaper lag in the same run; goal: delivery p99 < ${GOAL_P99_MS / 1000} s`,
  async run(ctx) {
    const received: Received[] = [];
    const receiver = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = Date.now();
        const e = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; type: string; data: { sandbox?: { id: string } } };
        received.push({ id: e.id, type: e.type, sandboxId: e.data.sandbox?.id, at });
        res.writeHead(204).end();
      });
    });
    receiver.keepAliveTimeout = 1000;
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const stack = await startStack(ctx, 'events', {
      PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
      PADDOCK_EXPIRY_WARNING_SECONDS: String(WARNING_SECONDS),
      PADDOCK_WEBHOOK_ALLOW_LOCAL: 'true',
      PADDOCK_WEBHOOK_SECRETS_KEY: randomBytes(32).toString('hex'),
      PADDOCK_SCRYPT_LOG_N: '10', // signing up the accounts is set-up, not measured
    });
    const db = new pg.Pool({ connectionString: ctx.databaseUrl, max: 2 });
    try {
      const started = Date.now();
      const accounts = await inBatches(Array.from({ length: COUNT }), PARALLEL, async () => {
        const { key } = await signUp(stack.url);
        if (WEBHOOKS) await callOk(stack.url, key, 'POST', '/v1/webhooks', { url: receiverUrl });
        return key;
      });
      ctx.log(`  ${COUNT} accounts with an endpoint each in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const createdAt = Date.now();
      const created = await inBatches(accounts, PARALLEL, async (key) => (await callOk(stack.url, key, 'POST', '/v1/sandboxes?wait=false', {})).body as SandboxObject);
      const ids = created.map((s) => s.id);
      ctx.log(`  ${COUNT} sandboxes created in ${((Date.now() - createdAt) / 1000).toFixed(1)} s`);
      const lastExpiry = Math.max(...created.map((s) => Date.parse(s.expiresAt)));
      const firstExpiry = Math.min(...created.map((s) => Date.parse(s.expiresAt)));
      const warnedBefore = firstExpiry - WARNING_SECONDS * 1000;
      const running = await waitFor(async () => {
        const { rows } = await db.query<{ n: string }>("select count(*) as n from sandboxes where id = any($1) and status = 'running'", [ids]);
        return Number(rows[0]!.n) === COUNT || Date.now() > warnedBefore ? Number(rows[0]!.n) : undefined;
      }, warnedBefore - Date.now() + 5000);
      ctx.log(`  ${running}/${COUNT} running before the first expiry warning`);

      // Until every sandbox is destroyed and its sandbox.destroyed event received, or 120 s past the cap.
      const deadline = lastExpiry + 120_000;
      let destroyed: { id: string; expires_at: Date; destroyed_at: Date; destroy_reason: string }[] = [];
      while (Date.now() < deadline) {
        await sleep(2000);
        destroyed = (await db.query('select id, expires_at, destroyed_at, destroy_reason from sandboxes where id = any($1) and state = $2', [ids, 'destroyed'])).rows;
        const delivered = received.filter((r) => r.type === 'sandbox.destroyed').length;
        if (Date.now() > firstExpiry) ctx.log(`  ${destroyed.length}/${COUNT} destroyed, ${delivered} sandbox.destroyed delivered, ${round((Date.now() - firstExpiry) / 1000)} s after the first expiresAt`);
        if (destroyed.length === COUNT && (delivered >= COUNT || !WEBHOOKS)) break;
      }
      const lag = destroyed.map((r) => r.destroyed_at.getTime() - r.expires_at.getTime());
      const destroyedAt = new Map(destroyed.map((r) => [r.id, r.destroyed_at.getTime()]));
      const destroyLatency = received.filter((r) => r.type === 'sandbox.destroyed' && destroyedAt.has(r.sandboxId!)).map((r) => r.at - destroyedAt.get(r.sandboxId!)!);
      const { rows: warned } = await db.query<{ id: string; created_at: Date }>("select id, created_at from events where type = 'sandbox.expiring' and sandbox_id = any($1)", [ids]);
      const warnedAt = new Map(warned.map((w) => [w.id, w.created_at.getTime()]));
      const warnLatency = received.filter((r) => r.type === 'sandbox.expiring' && warnedAt.has(r.id)).map((r) => r.at - warnedAt.get(r.id)!);
      const duplicates = received.length - new Set(received.map((r) => r.id)).size;
      const { rows: attempts } = await db.query<{ failed: string }>(
        "select count(*) filter (where status_code is null or status_code >= 300) as failed from webhook_attempts a join webhook_endpoints w on w.id = a.endpoint_id where w.url = $1",
        [receiverUrl],
      );
      const complete = destroyed.length === COUNT && (destroyLatency.length === COUNT || !WEBHOOKS);
      if (!complete) ctx.warn(`events: ${destroyed.length}/${COUNT} destroyed, ${destroyLatency.length} sandbox.destroyed delivered within 120 s of the last cap`);
      return [
        {
          subject: `${COUNT} sandboxes × ${WEBHOOKS ? '1 endpoint' : 'no endpoint'}, cap ${CAP_SECONDS} s, warning ${WARNING_SECONDS} s`,
          figures: {
            'running before warning': running ?? 0,
            destroyed: destroyed.length,
            'reaper lag p50 ms': percentile(lag, 50),
            'reaper lag p99 ms': percentile(lag, 99),
            'reaper lag max ms': round(Math.max(...lag)),
            'destroyed delivered': destroyLatency.length,
            'destroyed → 2xx p50 ms': percentile(destroyLatency, 50),
            'destroyed → 2xx p99 ms': percentile(destroyLatency, 99),
            'destroyed → 2xx max ms': round(Math.max(...destroyLatency)),
            'expiring → 2xx p50 ms': percentile(warnLatency, 50),
            'expiring → 2xx p99 ms': percentile(warnLatency, 99),
            'deliveries received': received.length,
            'duplicates': duplicates,
            'failed attempts': Number(attempts[0]?.failed ?? 0),
          },
          goal: WEBHOOKS ? { text: `delivery p99 < ${GOAL_P99_MS / 1000} s`, met: complete && percentile(destroyLatency, 99) < GOAL_P99_MS } : undefined,
          detail: { lag, destroyLatency, warnLatency },
        },
      ];
    } finally {
      await db.end();
      await stack.stop();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  },
};

async function waitFor<T>(check: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + Math.max(0, ms);
  for (;;) {
    const v = await check();
    if (v !== undefined || Date.now() > deadline) return v;
    await sleep(1000);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
