import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from 'node:net';
import { once } from 'node:events';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

// Admission control: the token buckets bound how often work starts, these caps how
// much of it is in progress at once, per sandbox and per account, across every replica.

const stack = await startSandboxStack({
  overrides: {
    PADDOCK_INFLIGHT_EXEC_PER_SANDBOX: '3',
    PADDOCK_INFLIGHT_EXEC_PER_ACCOUNT: '4',
    PADDOCK_INFLIGHT_FILES_PER_SANDBOX: '2',
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5',
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '10000',
  },
});

const exec = (key: string, id: string, command: string) =>
  call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: key, body: { command, timeoutSeconds: 30 } });

test('execs in progress are capped per sandbox and per account; a neighbour is not; a finished one frees its place', async () => {
  const [owner, neighbour] = await Promise.all([newAccount(stack.url, 'inflight'), newAccount(stack.url, 'inflightn')]);
  const [a, b] = await Promise.all([createSandbox(stack.url, owner.key), createSandbox(stack.url, owner.key)]);
  const n = await createSandbox(stack.url, neighbour.key);
  const long = [1, 2, 3].map(() => exec(owner.key, a.body.id, 'sleep 2'));
  await sleep(500);
  const perSandbox = await exec(owner.key, a.body.id, 'echo refused');
  assertProblem(perSandbox, 429, 'too_many_in_flight');
  assert.equal(perSandbox.body.scope, 'sandbox');
  assert.equal(perSandbox.headers.get('retry-after'), '1');
  const fourth = exec(owner.key, b.body.id, 'sleep 2');
  await sleep(300);
  const perAccount = await exec(owner.key, b.body.id, 'echo refused');
  assertProblem(perAccount, 429, 'too_many_in_flight');
  assert.equal(perAccount.body.scope, 'account');
  assert.equal((await exec(neighbour.key, n.body.id, 'echo hi')).body.stdout, 'hi\n');
  for (const done of await Promise.all([...long, fourth])) assert.equal(done.body.exitCode, 0);
  assert.equal((await exec(owner.key, a.body.id, 'echo again')).body.stdout, 'again\n');
});

test('a streamed exec holds its place until its client goes, then frees it', async () => {
  const owner = await newAccount(stack.url, 'inflights');
  const s = await createSandbox(stack.url, owner.key);
  const controllers = [1, 2, 3].map(() => new AbortController());
  const streams = await Promise.all(
    controllers.map((c) =>
      fetch(`${stack.url}/v1/sandboxes/${s.body.id}/exec`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
        body: JSON.stringify({ command: 'echo started; sleep 60', timeoutSeconds: 60 }),
        signal: c.signal,
      }),
    ),
  );
  assert.deepEqual(streams.map((r) => r.status), [200, 200, 200]);
  assertProblem(await exec(owner.key, s.body.id, 'echo refused'), 429, 'too_many_in_flight');
  for (const c of controllers) c.abort();
  let answer;
  for (let i = 0; i < 50; i++) {
    answer = await exec(owner.key, s.body.id, 'echo freed');
    if (answer.status === 200) break;
    await sleep(100);
  }
  assert.equal(answer?.body.stdout, 'freed\n');
});

test('file operations in progress have a cap of their own', async () => {
  const owner = await newAccount(stack.url, 'inflightf');
  const s = await createSandbox(stack.url, owner.key);
  const answers = await Promise.all(
    Array.from({ length: 12 }, () => call(stack.url, 'GET', `/v1/sandboxes/${s.body.id}/files/grep?pattern=x&path=/usr/share`, { token: owner.key })),
  );
  const refused = answers.filter((r) => r.status === 429);
  assert.ok(refused.length > 0, 'some were refused');
  for (const r of refused) assert.equal(r.body.code, 'too_many_in_flight');
  assert.ok(answers.every((r) => r.status === 200 || r.status === 429), JSON.stringify(answers.map((r) => r.status)));
});

test('requests whose bodies trickle in hold no place in flight: the account still runs commands', async () => {
  const owner = await newAccount(stack.url, 'inflight-trickle');
  const { body: s } = await createSandbox(stack.url, owner.key);
  // More half-sent exec requests than the account's cap (4): headers whole, the body never ends.
  const { port } = new URL(stack.url);
  const sockets = await Promise.all(
    Array.from({ length: 6 }, async () => {
      const socket = connect(Number(port), '127.0.0.1');
      await once(socket, 'connect');
      socket.on('error', () => undefined);
      socket.write(
        `POST /v1/sandboxes/${s.id}/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${owner.key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"command":`,
      );
      return socket;
    }),
  );
  try {
    await sleep(500);
    const res = await exec(owner.key, s.id, 'echo admitted');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.stdout, 'admitted\n');
  } finally {
    for (const socket of sockets) socket.destroy();
  }
});

test('clients that leave before their answer hold no place in flight afterwards', async () => {
  const owner = await newAccount(stack.url, 'inflight-leavers');
  const { body: s } = await createSandbox(stack.url, owner.key);
  const { port } = new URL(stack.url);
  // Whole requests, their connections cut a moment later (while the request is authenticated and
  // admitted, or while it runs): many more of them than the account's cap (4).
  for (let round = 0; round < 6; round++) {
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const socket = connect(Number(port), '127.0.0.1');
        await once(socket, 'connect');
        socket.on('error', () => undefined);
        const body = JSON.stringify({ command: 'echo gone' });
        socket.write(
          `POST /v1/sandboxes/${s.id}/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${owner.key}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
        await sleep(round * 2 + (i % 4));
        socket.destroy();
      }),
    );
  }
  await sleep(2000);
  const res = await exec(owner.key, s.id, 'echo admitted');
  assert.equal(res.status, 200, JSON.stringify(res.body));
});
