import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount, type TestAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';
import { makeCertificate, startReceiver, testNetwork, type Receiver } from '../helpers/webhooks.ts';

// test-plan: once (deliveries never reach the sandbox runtime the stack starts)
// Deliveries are fair per account: one account's receivers that never answer hold at most
// PADDOCK_WEBHOOK_CONCURRENCY_PER_ACCOUNT deliveries at once, on all workers together, so the
// worker's slots stay free for other accounts; the account's other deliveries wait in the delayed
// set (no worker slot, no try used) and are all sent in their turn.

const HOG_ACCOUNTS = 3;
const HOG_ENDPOINTS = 3;
const TIMEOUT_SECONDS = 10;
const names = ['prompt.test', 'paced.test', 'paced-2.test', ...Array.from({ length: HOG_ACCOUNTS * HOG_ENDPOINTS }, (_, i) => `hang-${i}.test`)];
const cert = makeCertificate(names);
const net = testNetwork(cert.cert);
const stack = await startSandboxStack({
  webhookTransport: net.transport,
  overrides: {
    // Eight slots; each hogging account holds at most two of them. Without the account's bound,
    // its nine hanging deliveries (three endpoints, at most three each) would take all eight.
    PADDOCK_WEBHOOK_WORKER_CONCURRENCY: '8',
    PADDOCK_WEBHOOK_CONCURRENCY_PER_ACCOUNT: '2',
    PADDOCK_WEBHOOK_CONCURRENCY_PER_ENDPOINT: '3',
    PADDOCK_WEBHOOK_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
  },
});
const url = stack.url;
let nextAddress = 10;

async function receiverAt(hosts: string[], behaviour?: Parameters<typeof startReceiver>[1]): Promise<Receiver> {
  const r = await startReceiver(cert, behaviour);
  net.host(hosts, `203.0.113.${nextAddress++}`, r);
  return r;
}

async function addWebhook(acct: TestAccount, hookUrl: string): Promise<string> {
  const res = await call(url, 'POST', '/v1/webhooks', { token: acct.key, body: { url: hookUrl } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id as string;
}

/** Deliveries the worker parked on meeting an account's bound, from its metrics. */
async function accountDeferrals(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${stack.workers[0]!.metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('paddock_webhook_deferrals_total{bound="account"}'));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

async function sendTest(acct: TestAccount, id: string): Promise<string> {
  const res = await call(url, 'POST', `/v1/webhooks/${id}/test`, { token: acct.key });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id as string;
}

test('accounts whose receivers never answer hold a bounded share of the workers: another account’s delivery goes at once', async () => {
  // Every hanging delivery goes to one receiver (under nine names), which counts them all at once.
  const hang = await receiverAt(names.filter((n) => n.startsWith('hang-')), () => ({ hang: true }));
  const prompt = await receiverAt(['prompt.test']);
  const [other, ...hogs] = await Promise.all(['other', ...Array.from({ length: HOG_ACCOUNTS }, (_, a) => `hog-${a}`)].map((label) => newAccount(url, label)));
  const otherHook = await addWebhook(other!, 'https://prompt.test/');
  await Promise.all(
    hogs.map(async (acct, a) => {
      for (let e = 0; e < HOG_ENDPOINTS; e++) {
        const id = await addWebhook(acct, `https://hang-${a * HOG_ENDPOINTS + e}.test/`);
        await Promise.all([0, 1, 2].map(() => sendTest(acct, id)));
      }
    }),
  );
  await eventually('every hogging account at its bound', 10_000, async () => (hang.inFlight() >= HOG_ACCOUNTS * 2 ? true : undefined), 20);
  // And every delivery over the bounds parked: on a loaded host, parking them all takes the free
  // slots for seconds, which would be counted against the other account's delivery.
  const parked = HOG_ACCOUNTS * (HOG_ENDPOINTS * 3 - 2);
  await eventually('every other hogging delivery parked', 20_000, async () => ((await accountDeferrals()) >= parked ? true : undefined), 50);
  const sentAt = Date.now();
  const eventId = await sendTest(other!, otherHook);
  await eventually('the other account’s delivery', TIMEOUT_SECONDS * 1000 + 5000, async () => (prompt.received.length > 0 ? true : undefined), 10);
  const arrived = prompt.received[0]!;
  assert.equal(arrived.headers['webhook-id'], eventId);
  // It did not wait for a hanging delivery to give up its slot: it arrived while every one of them
  // still hung (in a few hundred milliseconds, on a quiet machine). Without the bound every slot
  // hangs, and the first to time out is the first it could have.
  const hangEnded = hang.firstEndedAt();
  assert.ok(hangEnded === undefined || arrived.receivedAt < hangEnded, `arrived ${arrived.receivedAt - sentAt} ms after it was sent, ${arrived.receivedAt - hangEnded!} ms after a hanging delivery gave up`);
  assert.equal(hang.maxInFlight(), HOG_ACCOUNTS * 2, 'each hogging account held two deliveries at once, no more');
});

test('one account’s deliveries over its bound wait their turn and are all sent; its endpoints share the bound', async () => {
  // Two endpoints of one account on one receiver (under two names), answering after a while: at
  // most two deliveries at once across both (each endpoint alone could have three), and all ten
  // arrive, each once.
  const paced = await receiverAt(['paced.test', 'paced-2.test'], () => ({ status: 200, delayMs: 300 }));
  const acct = await newAccount(url, 'paced');
  const first = await addWebhook(acct, 'https://paced.test/');
  const second = await addWebhook(acct, 'https://paced-2.test/');
  const sent: string[] = [];
  for (let i = 0; i < 5; i++) sent.push(await sendTest(acct, first), await sendTest(acct, second));
  await eventually('all ten delivered', 30_000, async () => (new Set(paced.received.map((r) => r.headers['webhook-id'])).size >= sent.length ? true : undefined));
  assert.deepEqual([...new Set(paced.received.map((r) => r.headers['webhook-id'] as string))].sort(), [...sent].sort());
  assert.equal(paced.maxInFlight(), 2);
  const log = await eventually('every attempt logged', 5000, async () => {
    const all = [];
    for (const id of [first, second]) all.push(...((await call(url, 'GET', `/v1/webhooks/${id}/deliveries`, { token: acct.key })).body.data as { statusCode: number; attempt: number }[]));
    return all.filter((d) => d.statusCode === 200).length >= sent.length ? all : undefined;
  });
  // Waiting for its turn used no try: every delivery succeeded on its first.
  assert.ok(log.every((d) => d.attempt === 1 && d.statusCode === 200), JSON.stringify(log));
});
