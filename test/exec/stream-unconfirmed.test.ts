import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { LEASE_MS } from '../../api/auth/key-sessions.ts';
import { newAccount } from '../helpers/accounts.ts';
import { holdableRelay } from '../helpers/holdable-relay.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { within } from '../helpers/streams.ts';
import { sandboxFor } from '../files/helpers.ts';

// A streamed answer sends only while its key was confirmed lately (api/auth/key-sessions.ts): a
// line made once the confirmation has lapsed waits for the next check. The stream's end must wait
// with it. The API reaches Redis through a relay the test holds, so the checks go unanswered
// while the command ends.

const relay = await holdableRelay(new URL(process.env.REDIS_URL!));
const stack = await startSandboxStack({ overrides: { REDIS_URL: relay.url } });
// After the stack has closed (hooks run in the order they were registered).
after(() => relay.close());

test("a streamed exec's exit, made while its key's check is due, comes before the stream ends", async () => {
  const account = await newAccount(stack.url, 'stream-unconfirmed');
  const box = await sandboxFor(stack, account.key);
  const res = await fetch(`${stack.url}/v1/sandboxes/${box.id}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify({ command: 'echo before; sleep 2' }),
  });
  assert.equal(res.status, 200);
  let text = '';
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const read = async () => {
    const { done, value } = await reader.read();
    if (!done) text += decoder.decode(value, { stream: true });
    return done;
  };
  while (!text.includes('\n')) assert.equal(await within('the first line', 30_000, read()), false);
  // The command's end, its exit line with it, falls while no check is answered.
  relay.hold();
  await sleep(2000 + LEASE_MS);
  relay.release();
  await within('the stream ends', 30_000, (async () => {
    while (!(await read()));
  })());
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as { type: string; data?: string; exitCode?: number });
  assert.deepEqual(lines.map((l) => l.type), ['stdout', 'exit'], text);
  assert.equal(lines[0]!.data, 'before\n');
  assert.equal(lines[1]!.exitCode, 0);
});
