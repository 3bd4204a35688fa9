import { test } from 'node:test';
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

// Work on the API's event loop that an attacker's input could make large: a crafted
// glob over a crafted tree, and a view of the first line of a file made of newlines alone. The
// API, its runtime and (on kubernetes) the stand-in all run in this process, so the event loop's
// delay here is what a neighbour's request would wait.

const stack = await startSandboxStack({ overrides: { PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '10000' } });
const account = await newAccount(stack.url, 'budgets');
const sandbox = (await createSandbox(stack.url, account.key)).body as { id: string };

async function sh(command: string) {
  const res = await call(stack.url, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, { token: account.key, body: { command, timeoutSeconds: 60 } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.exitCode, 0, res.body.stderr);
}

async function worstDelayDuring<T>(work: () => Promise<T>): Promise<{ result: T; maxMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  try {
    const result = await work();
    return { result, maxMs: histogram.max / 1e6 };
  } finally {
    histogram.disable();
  }
}

test('a crafted glob over a deep tree spends a bounded budget and answers truncated', async () => {
  // A chain of 1,500 directories named "a", and beside each a file "ab".
  await sh(`d=/workspace/t; for i in $(seq 1 1500); do d=$d/a; done; mkdir -p $d; cd /workspace/t; p=.; for i in $(seq 1 1500); do p=$p/a; : > $p/ab 2>/dev/null || break; done`);
  const pattern = `t/${'**/*a*a*a*a*a*a*a*a*/'.repeat(40)}*b`;
  const { result, maxMs } = await worstDelayDuring(() =>
    call(stack.url, 'GET', `/v1/sandboxes/${sandbox.id}/files/glob?pattern=${encodeURIComponent(pattern)}`, { token: account.key }),
  );
  assert.equal(result.status, 200, JSON.stringify(result.body));
  assert.ok(maxMs < 1000, `the event loop was held ${maxMs} ms at once`);
  // The matching budget ran out (the walk itself would have ended well inside its limits).
  assert.equal(result.body.truncated, true);
});

test('viewing the first line of 8 MiB of newlines answers at once, without an index of every line', async () => {
  await sh('head -c 8388608 /dev/zero | tr "\\0" "\\n" > /workspace/newlines');
  const rssBefore = process.memoryUsage().rss;
  const { result, maxMs } = await worstDelayDuring(() =>
    call(stack.url, 'GET', `/v1/sandboxes/${sandbox.id}/files?path=/workspace/newlines&startLine=1&endLine=1`, { token: account.key }),
  );
  assert.equal(result.status, 200, JSON.stringify(result.body));
  assert.equal(result.body.content, '\n');
  assert.equal(result.body.totalLines, 8 * 1024 * 1024);
  assert.equal(result.body.truncated, true);
  assert.ok(maxMs < 500, `the event loop was held ${maxMs} ms at once`);
  assert.ok(process.memoryUsage().rss - rssBefore < 100 * 1024 * 1024, 'no per-line index');
});

test('stdin past the default body limit reaches the command whole; the other members stay within it', async () => {
  const limit = stack.config.PADDOCK_BODY_LIMIT_BYTES;
  const stdin = 'ab\n'.repeat(limit); // three times the limit
  const res = await call(stack.url, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, {
    token: account.key,
    body: { command: 'wc -c; echo done', stdin },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 500));
  assert.equal(res.body.stdout, `${Buffer.byteLength(stdin)}\ndone\n`);
  const env = await call(stack.url, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, {
    token: account.key,
    body: { command: 'true', stdin: 'x', env: { BIG: 'v'.repeat(limit) } },
  });
  assert.equal(env.status, 413, JSON.stringify(env.body));
  assert.equal(env.body.code, 'payload_too_large');
});
