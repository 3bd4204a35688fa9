import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';
import { openStream, within } from '../helpers/streams.ts';
import { LEASE_MS } from '../../api/auth/key-sessions.ts';
import { holdableRelay } from '../helpers/holdable-relay.ts';

// A replica that cannot reach Redis cannot hear of a revocation: once its keys' confirmation
// lapses it sends nothing for them, and a revocation meanwhile waits that lapse out before it
// answers. The second API instance reaches Redis through a loopback relay the test stops
// forwarding (a silent partition: its connections stay open, nothing gets through).

const first = await startTestApi();
const relay = await holdableRelay(new URL(first.deps.config.REDIS_URL));
const second = await startTestApi({ config: { ...first.deps.config, REDIS_URL: relay.url } });
// After the instance behind it has closed (hooks run in the order they were registered).
after(() => relay.close());

test('a replica cut off from Redis holds its event stream once the key is unconfirmed; the revocation waits for that, and the stream ends without what came after it', async () => {
  const a = await newAccount(first.url, 'cut-off');
  const other = (await call(first.url, 'POST', '/v1/api-keys', { token: a.token, body: { name: 'other' } })).body.key as string;
  const created = (key: string) => call(first.url, 'POST', '/v1/sandboxes?wait=false', { token: key, body: {} });
  const stream = await openStream(second.url, '/v1/events', a.key, 'text/event-stream');
  const early = (await created(other)).body.id as string;
  await eventually('the stream is live', 10_000, async () => (stream.text().includes(early) ? true : undefined));

  relay.hold();
  try {
    const started = performance.now();
    assert.equal((await call(first.url, 'DELETE', `/v1/api-keys/${a.keyId}`, { token: a.token })).status, 204);
    const took = performance.now() - started;
    const late = (await created(other)).body.id as string;
    // The cut-off replica still reads PostgreSQL (its streams look for events every 5 s even
    // when nothing rings them through Redis), and finds the new event; it does not send it.
    await sleep(6000);
    assert.ok(!stream.text().includes(late), 'an event recorded after the revocation reached the stream of the cut-off replica');
    assert.ok(took >= LEASE_MS, `the revocation answered after ${Math.round(took)} ms, before the cut-off replica's confirmation lapsed`);
    relay.release();
    // Back in touch, the replica learns the key is revoked and ends the stream.
    assert.equal(await within('the stream ending', 10_000, stream.ended), 'ended');
    assert.ok(!stream.text().includes(late));
  } finally {
    relay.release();
  }
});
