import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

const logLines: string[] = [];
const stack = await startSandboxStack({ logLines, overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });

async function setup() {
  const a = await newAccount(stack.url);
  const s = (await createSandbox(stack.url, a.key)).body;
  const exec = (body: unknown) => call(stack.url, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: a.key, body });
  const secret = (body: unknown) => call(stack.url, 'POST', '/v1/secrets', { token: a.key, body });
  return { a, s, exec, secret };
}

test('secrets reach every exec as environment variables, masked as *** in the output', async () => {
  const { exec, secret } = await setup();
  const value = 'tok-3f9a1c2b7d';
  const created = await secret({ name: 'API_TOKEN', value });
  assert.equal(created.status, 201);
  assert.deepEqual(Object.keys(created.body).sort(), ['createdAt', 'inject', 'name', 'sandboxId']);
  assert.equal(created.body.sandboxId, null);
  assert.equal(created.body.inject, null);
  const res = await exec({ command: 'echo "token=$API_TOKEN"; test "$API_TOKEN" = tok-3f9a1c2b7d && echo matches' });
  assert.equal(res.body.stdout, 'token=***\nmatches\n');
  const err = await exec({ command: 'echo "$API_TOKEN" >&2' });
  assert.equal(err.body.stderr, '***\n');
  assert.ok(!JSON.stringify(res.body).includes(value));
});

test("the sandbox's secret wins over the account's on a name clash; a change applies to the next exec", async () => {
  const { s, exec, secret } = await setup();
  await secret({ name: 'DB_PASS', value: 'account-level-1' });
  await secret({ name: 'DB_PASS', value: 'sandbox-level-2', sandboxId: s.id });
  assert.equal((await exec({ command: 'test "$DB_PASS" = sandbox-level-2 && echo sandbox' })).body.stdout, 'sandbox\n');
  const replaced = await secret({ name: 'DB_PASS', value: 'sandbox-level-3', sandboxId: s.id });
  assert.equal(replaced.status, 200);
  assert.equal((await exec({ command: 'test "$DB_PASS" = sandbox-level-3 && echo changed' })).body.stdout, 'changed\n');
});

test('a value split across two chunks of output is still masked, streamed or not', async () => {
  const { a, s, exec, secret } = await setup();
  await secret({ name: 'SPLIT', value: 'abcdefghij' });
  // Buffered, nothing is released early: the pause between the halves changes nothing.
  assert.equal((await exec({ command: "printf 'xx abcde'; sleep 0.3; printf 'fghij yy'" })).body.stdout, 'xx *** yy');
  // Streamed, the second half waits until this reader has had the first: the bytes held back are
  // released once the output is quiet (a reader never waits on them: see stream-masking.test.ts),
  // whatever the host's load; what follows them of the secret is still masked.
  const gated = "printf 'xx abcde'; for i in $(seq 1200); do [ -e /workspace/split-go ] && break; sleep 0.05; done; printf 'fghij yy'";
  const res = await fetch(`${stack.url}/v1/sandboxes/${s.id}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify({ command: gated }),
  });
  const lines: { type: string; data?: string }[] = [];
  let pending = '';
  let released = false;
  for await (const chunk of res.body!) {
    pending += Buffer.from(chunk).toString();
    const complete = pending.split('\n');
    pending = complete.pop()!;
    lines.push(...complete.filter(Boolean).map((l) => JSON.parse(l)));
    const seen = lines.filter((l) => l.type === 'stdout').map((l) => l.data).join('');
    if (!released && seen === 'xx abcde') {
      released = true;
      assert.equal((await exec({ command: 'touch /workspace/split-go' })).status, 200);
    }
  }
  assert.ok(released, 'the held-back bytes reached the reader before the rest of the output');
  const streamed = lines.filter((l) => l.type === 'stdout').map((l) => l.data).join('');
  assert.equal(streamed, 'xx abcde*** yy');
});

test('listing shows names and scopes, never values; delete removes; sandbox secrets go with the sandbox', async () => {
  const { a, s, exec, secret } = await setup();
  await secret({ name: 'ONE', value: 'value-one-xyz' });
  await secret({ name: 'TWO', value: 'value-two-xyz', sandboxId: s.id });
  const all = await call(stack.url, 'GET', '/v1/secrets', { token: a.key });
  assert.deepEqual(all.body.data.map((x: any) => [x.name, x.sandboxId]), [['ONE', null], ['TWO', s.id]]);
  assert.ok(!JSON.stringify(all.body).includes('value-'));
  const scoped = await call(stack.url, 'GET', `/v1/secrets?sandboxId=${s.id}`, { token: a.key });
  assert.deepEqual(scoped.body.data.map((x: any) => x.name), ['TWO']);
  assert.equal((await call(stack.url, 'DELETE', '/v1/secrets/ONE', { token: a.key })).status, 204);
  assertProblem(await call(stack.url, 'DELETE', '/v1/secrets/ONE', { token: a.key }), 404, 'secret_not_found');
  assert.equal((await exec({ command: 'echo "[$ONE]"' })).body.stdout, '[]\n');
  await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
  const after = await call(stack.url, 'GET', `/v1/secrets?sandboxId=${s.id}`, { token: a.key });
  assert.deepEqual(after.body.data, []);
  assertProblem(await secret({ name: 'THREE', value: 'value-3', sandboxId: s.id }), 409, 'sandbox_not_running');
});

test('secret names are validated, foreign sandboxes are 404, values never reach a log line', async () => {
  const { secret } = await setup();
  const other = await setup();
  for (const name of ['1BAD', 'has space', 'PATH', 'LD_PRELOAD', '']) {
    assertProblem(await secret({ name, value: 'value-x' }), 400, 'invalid_request');
  }
  assertProblem(await secret({ name: 'OK', value: 'value-ok', sandboxId: other.s.id }), 404, 'sandbox_not_found');
  assertProblem(await secret({ name: 'OK', value: 'value-x', extra: 1 }), 400, 'invalid_request');
  const marker = 'log-canary-91f3e2';
  await other.secret({ name: 'CANARY', value: marker });
  await other.exec({ command: 'echo "$CANARY"' });
  assert.ok(logLines.length > 0, 'logs were captured');
  assert.ok(!logLines.some((l) => l.includes(marker)), 'a secret value reached the logs');
});
