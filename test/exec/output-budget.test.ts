import { test } from 'node:test';
import WebSocket from 'ws';
import assert from 'node:assert/strict';
import { OutputBudget } from '../../api/services/exec/output-budget.ts';
import { OUTPUT_WINDOW_BYTES } from '../../shared/runtime/types.ts';
import { CHUNK_BYTES } from '../../shared/runtime/local/agent/protocol.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

// Each account's output is paced per web process (api/services/exec/output-budget.ts), so that
// one tenant printing as fast as it can does not take the web's event loop from the others.

const RATE = 128 * 1024;
const BURST = 64 * 1024;
/**
 * The soonest `bytes` of output can all be passed on: the burst at once, what the runtime's window
 * holds unpaid, and the last chunk, which goes out before its debt is waited for (each chunk is
 * paid for before the next is read). A terminal once came 5 ms under the bound without it.
 */
const floorMs = (bytes: number) => ((bytes - BURST - OUTPUT_WINDOW_BYTES - CHUNK_BYTES) / RATE) * 1000;
const stack = await startSandboxStack({
  overrides: { PADDOCK_EXEC_OUTPUT_BYTES_PER_SECOND: String(RATE), PADDOCK_EXEC_OUTPUT_BURST_BYTES: String(BURST), PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' },
});

test('the budget: a burst at once, then the refill rate; accounts apart; 0 is no budget', async () => {
  const budget = new OutputBudget(1000 * 1024, 64 * 1024);
  // From before the first spend: the refill counts from it, so a slow step between the two
  // spends shortens the wait by as much (94 ms from the second spend in one loaded CI run).
  const started = performance.now();
  assert.equal(budget.spend('acct_a', 64 * 1024), undefined, 'the burst is spent without a wait');
  const wait = budget.spend('acct_a', 100 * 1024);
  assert.ok(wait instanceof Promise, 'past the burst, a wait');
  await wait;
  // 100 KiB of debt at 1000 KiB/s.
  assert.ok(performance.now() - started >= 95, `${performance.now() - started} ms`);
  assert.equal(budget.spend('acct_b', 64 * 1024), undefined, 'another account has its own');
  const unlimited = new OutputBudget(0, 0);
  for (let i = 0; i < 100; i++) assert.equal(unlimited.spend('acct_a', 1 << 20), undefined);
});

test('many accounts come and go: the whole budgets are let go, the others kept', async () => {
  const budget = new OutputBudget(1024, 1024);
  // A byte each, refilled after a millisecond: each batch's are whole again by the next batch. (In
  // one tight loop, a fast run added a thousand in less than that, none of them whole yet.)
  const BATCH = 100;
  for (let i = 0; i < 5000; i++) {
    void budget.spend(`acct_${i}`, 1);
    if (i % BATCH === BATCH - 1) await new Promise((resolve) => setTimeout(resolve, 3));
  }
  const held = (budget as unknown as { accounts: Map<string, unknown> }).accounts;
  assert.ok(held.size <= 1024 + BATCH, `${held.size} accounts held`);
  assert.ok(held.has('acct_4999'));
});

test("an account printing past its budget waits, whole; another account's command does not", async () => {
  const loud = await newAccount(stack.url);
  const quiet = await newAccount(stack.url);
  const created = await createSandbox(stack.url, loud.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const loudBox = created.body;
  const quietBox = (await createSandbox(stack.url, quiet.key)).body;
  const bytes = 1_000_000;
  let loudDone = false;
  const started = performance.now();
  const flood = call(stack.url, 'POST', `/v1/sandboxes/${loudBox.id}/exec`, {
    token: loud.key,
    body: { command: `head -c ${bytes} /dev/zero | tr '\\0' a` },
  }).finally(() => (loudDone = true));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const echo = await call(stack.url, 'POST', `/v1/sandboxes/${quietBox.id}/exec`, { token: quiet.key, body: { command: 'head -c 60000 /dev/zero | tr "\\0" q' } });
  assert.equal(echo.status, 200);
  assert.equal(echo.body.stdout, 'q'.repeat(60000), 'within its own burst');
  assert.equal(loudDone, false, 'the other account still waits on its budget');
  const res = await flood;
  assert.equal(res.status, 200);
  assert.equal(res.body.stdout.length, bytes);
  assert.ok(/^a+$/.test(res.body.stdout), 'the output is whole');
  // What is past the burst comes at the rate. The command waits for it too, once the hops between
  // (the runtime's window, and on Kubernetes the sockets' buffers) are full.
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= floorMs(bytes), `answered in ${elapsed} ms, the budget allows it no sooner than ${Math.round(floorMs(bytes))} ms`);
});

test('streamed output is paced the same way, and still comes as it is printed', async () => {
  const a = await newAccount(stack.url);
  const box = (await createSandbox(stack.url, a.key)).body;
  const started = performance.now();
  const res = await fetch(`${stack.url}/v1/sandboxes/${box.id}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify({ command: `head -c 800000 /dev/zero | tr '\\0' s` }),
  });
  let firstAt: number | undefined;
  let text = '';
  for await (const chunk of res.body!) {
    firstAt ??= performance.now() - started;
    text += Buffer.from(chunk).toString();
  }
  const total = performance.now() - started;
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as { type: string; data?: string; exitCode?: number });
  assert.equal(lines.filter((l) => l.type === 'stdout').map((l) => l.data).join('').length, 800000);
  assert.equal(lines.at(-1)!.exitCode, 0);
  assert.ok(total >= floorMs(800000), `${total} ms`);
  assert.ok(firstAt! < total / 2, `the first output came at ${firstAt} ms of ${total}`);
});

test('a terminal printing past its budget is paced too, its output whole', async () => {
  const a = await newAccount(stack.url);
  const box = (await createSandbox(stack.url, a.key)).body;
  const bytes = 1_000_000;
  const command = ['/bin/sh', '-c', `head -c ${bytes} /dev/zero | tr '\\0' t; echo; echo END`].map((a) => `command=${encodeURIComponent(a)}`).join('&');
  const started = performance.now();
  const ws = new WebSocket(`${stack.url.replace(/^http/, 'ws')}/v1/sandboxes/${box.id}/terminal?${command}`, 'paddock.terminal.v1', {
    headers: { authorization: `Bearer ${a.key}` },
  });
  let text = '';
  ws.on('message', (data: Buffer) => {
    if (data[0] === 1) text += data.subarray(1).toString();
  });
  const code = await new Promise<number>((resolve, reject) => {
    ws.on('close', (c) => resolve(c));
    ws.on('error', reject);
  });
  const total = performance.now() - started;
  assert.equal(code, 1000, text.slice(-200));
  assert.equal(text.match(/t/g)?.length, bytes, 'every byte printed came');
  assert.match(text, /END/);
  assert.ok(total >= floorMs(bytes), `${total} ms`);
});
