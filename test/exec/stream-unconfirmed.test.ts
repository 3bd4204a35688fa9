import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { LEASE_MS } from '../../api/auth/key-sessions.ts';
import { newAccount } from '../helpers/accounts.ts';
import { holdableRelay } from '../helpers/holdable-relay.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { openStream, within } from '../helpers/streams.ts';
import { eventually } from '../helpers/eventually.ts';
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
  const stream = await openStream(stack.url, `/v1/sandboxes/${box.id}/exec`, account.key, 'application/x-ndjson', { command: 'echo before; sleep 2' });
  await eventually('the first line', 30_000, async () => (stream.text().includes('\n') ? true : undefined), 10);
  // The command's end, its exit line with it, falls while no check is answered.
  relay.hold();
  await sleep(2000 + LEASE_MS);
  relay.release();
  assert.equal(await within('the stream ends', 30_000, stream.ended), 'ended');
  const text = stream.text();
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as { type: string; data?: string; exitCode?: number });
  assert.deepEqual(lines.map((l) => l.type), ['stdout', 'exit'], text);
  assert.equal(lines[0]!.data, 'before\n');
  assert.equal(lines[1]!.exitCode, 0);
});
