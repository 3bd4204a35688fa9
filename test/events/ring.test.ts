import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { EventHub } from '../../api/services/events/hub.ts';
import { eventsChannel } from '../../shared/events/announce.ts';
import { ringMessage, type SandboxTransition } from '../../shared/events/ring.ts';
import type { RecordedEvent } from '../../shared/events/types.ts';
import { createLogger } from '../../shared/logger.ts';
import { testConfig } from '../helpers/config.ts';

// The ring (shared/events/ring.ts) carries each reported sandbox's transition, so that a create or
// destroy waiting on it answers without reading the row. A wait must never be told less than it was
// told already, and nothing but a well-formed message may wake it.

const transition = (id: string, state: SandboxTransition['state'], status: SandboxTransition['status']): SandboxTransition => ({
  id,
  state,
  status,
  readyAt: status === 'pending' ? null : '2026-11-25T10:00:00.000Z',
  destroyedAt: state === 'destroyed' ? '2026-11-25T10:00:01.000Z' : null,
  destroyReason: state === 'destroyed' ? 'user' : null,
  failureMessage: null,
  finalSnapshotId: null,
});

const message = (accountId: string, sandboxes: SandboxTransition[]) => JSON.stringify({ a: accountId, s: sandboxes });

async function hubOnRedis() {
  const config = testConfig();
  const hub = new EventHub(config, createLogger('silent', 'test'));
  const redis = new Redis(config.REDIS_URL);
  const channel = eventsChannel(config.PADDOCK_REDIS_PREFIX);
  // The hub subscribes when a first wait registers: messages count once Redis has the subscription.
  hub.watch('acct_probe', 'sbx_probe').release();
  for (let i = 0; (await redis.pubsub('NUMSUB', channel))[1] !== 1; i++) {
    if (i === 200) throw new Error('the hub did not subscribe');
    await new Promise((r) => setTimeout(r, 10));
  }
  return { hub, publish: (m: string) => redis.publish(channel, m), close: () => (hub.close(), redis.disconnect()) };
}

test("a wait hears its sandbox's furthest transition: a running heard after destroyed does not take it back, another sandbox's is not its own", async (t) => {
  const { hub, publish, close } = await hubOnRedis();
  t.after(close);
  const wait = hub.watch('acct_a', 'sbx_one');
  const woken = wait.changed(5000);
  await publish(message('acct_a', [transition('sbx_two', 'destroyed', 'terminated')]));
  await woken;
  assert.equal(wait.heard(), undefined, "another sandbox's transition wakes the wait and is not its own");
  await publish(message('acct_a', [transition('sbx_one', 'active', 'running')]));
  await wait.changed(5000);
  assert.equal(wait.heard()?.status, 'running');
  await publish(message('acct_a', [transition('sbx_one', 'destroyed', 'terminated')]));
  await wait.changed(5000);
  await publish(message('acct_a', [transition('sbx_one', 'active', 'running')]));
  await wait.changed(5000);
  assert.equal(wait.heard()?.state, 'destroyed');
  assert.equal(wait.heard()?.destroyReason, 'user');
  wait.release();
});

test("the account id alone still wakes a wait; a malformed message or another account's wakes nothing", async (t) => {
  const { hub, publish, close } = await hubOnRedis();
  t.after(close);
  const wait = hub.watch('acct_b', 'sbx_b');
  for (const noise of ['{"a":"acct_b"', '{"a":"acct_b","s":"x"}', '{"a":5,"s":[]}', '', message('acct_c', [transition('sbx_b', 'active', 'running')])]) {
    await publish(noise);
  }
  const started = Date.now();
  await wait.changed(300);
  assert.ok(Date.now() - started >= 250, 'nothing woke the wait before its poll');
  assert.equal(wait.heard(), undefined);
  const woken = wait.changed(5000);
  const at = Date.now();
  await publish('acct_b');
  await woken;
  assert.ok(Date.now() - at < 2000, 'the account id alone woke it');
  assert.equal(wait.heard(), undefined);
  wait.release();
});

test("a ring message carries each of the account's sandbox events' transitions, and is the account id alone without any", () => {
  const event = (accountId: string, type: RecordedEvent['type'], data: Record<string, unknown>): RecordedEvent => ({
    seq: '1', id: 'evt_x', accountId, sandboxId: null, type, createdAt: new Date(), data,
  });
  const sandbox = { ...transition('sbx_r', 'active', 'running'), image: 'img', createdAt: '2026-11-25T09:59:59.000Z', expiresAt: '2026-11-25T10:29:59.000Z', metadata: { a: 'b' } };
  const carried = JSON.parse(
    ringMessage('acct_r', [event('acct_r', 'sandbox.running', { sandbox }), event('acct_other', 'sandbox.running', { sandbox: { ...sandbox, id: 'sbx_o' } }), event('acct_r', 'usage.threshold', { percent: 80 })]),
  );
  assert.deepEqual(carried, { a: 'acct_r', s: [transition('sbx_r', 'active', 'running')] });
  assert.equal(ringMessage('acct_r', [event('acct_r', 'usage.threshold', { percent: 80 })]), 'acct_r');
});
