import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { makeCertificate, startReceiver, testNetwork, verifyStandardWebhook, type Receiver } from '../helpers/webhooks.ts';

// test-plan: once (deliveries never reach the sandbox runtime the stack starts)

// Webhook delivery (docs/api.md, "Events and webhooks"), to real HTTPS receivers on loopback reached
// through the injected test network (test/helpers/webhooks.ts): signed as Standard Webhooks say,
// in order per sandbox, retried on 500 and on timeouts, bounded per endpoint, disabled after
// failing for the whole retry window, and never connected to a refused address.

const cert = makeCertificate(['hooks.test', 'slow.test', 'fast.test', 'redirect.test', 'rebind.test', 'down.test', 'rotate.test', 'flaky.test', 'late.test']);
const net = testNetwork(cert.cert);
const stack = await startSandboxStack({
  webhookTransport: net.transport,
  overrides: {
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10',
    PADDOCK_WEBHOOK_TIMEOUT_SECONDS: '2',
    PADDOCK_WEBHOOK_BACKOFF_BASE_MS: '200',
    PADDOCK_WEBHOOK_BACKOFF_MAX_SECONDS: '1',
    PADDOCK_WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2',
  },
});
const url = stack.url;
let nextAddress = 10;

/** A receiver of its own, at a documentation address under `name`. */
async function receiverAt(name: string, behaviour?: Parameters<typeof startReceiver>[1]): Promise<Receiver> {
  const r = await startReceiver(cert, behaviour);
  net.host([name], `203.0.113.${nextAddress++}`, r);
  return r;
}

async function addWebhook(acct: TestAccount, body: unknown) {
  const res = await call(url, 'POST', '/v1/webhooks', { token: acct.key, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; secret: string; url: string; events: string[] };
}

const deliveries = async (acct: TestAccount, id: string) => {
  const res = await call(url, 'GET', `/v1/webhooks/${id}/deliveries`, { token: acct.key });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data as any[];
};

test('deliveries are signed per Standard Webhooks, carry the event object, and a sandbox’s events arrive in order', async () => {
  // Answers in random order of time: later events must still not overtake earlier ones.
  const r = await receiverAt('hooks.test', () => ({ status: 200, delayMs: Math.floor(Math.random() * 150) }));
  const acct = await newAccount(url, 'signed');
  const hook = await addWebhook(acct, { url: 'https://hooks.test/paddock?x=1', description: 'ci' });
  assert.match(hook.id, /^wh_[0-9a-z]{24}$/);
  assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  assert.deepEqual(hook.events, ['*']);
  const listed = await call(url, 'GET', '/v1/webhooks', { token: acct.key });
  assert.equal(listed.body.data.length, 1);
  assert.equal(listed.body.data[0].secret, undefined);
  assert.doesNotMatch(JSON.stringify(listed.body), /whsec_/);

  const sandboxIds: string[] = [];
  for (let i = 0; i < 3; i++) sandboxIds.push((await createSandbox(url, acct.key, '?wait=false')).body.id);
  await Promise.all(sandboxIds.map((id) => call(url, 'DELETE', `/v1/sandboxes/${id}`, { token: acct.key })));
  const events = (await call(url, 'GET', '/v1/events', { token: acct.key })).body.data as any[];
  const ids = () => new Set(r.received.map((x) => x.headers['webhook-id']));
  await eventually('every event delivered', 30_000, async () => (ids().size >= events.length ? true : undefined)).catch(async (err: unknown) => {
    const state = await stack.apis[0]!.deps.pg.query(
      `select d.event_id, e.type, d.sandbox_id, d.state, d.attempts, d.next_attempt_at, d.created_at from webhook_deliveries d join events e on e.id = d.event_id where d.endpoint_id = $1 order by d.event_seq`,
      [hook.id],
    );
    const undispatched = await stack.apis[0]!.deps.pg.query(`select id, type, dispatched_at from events where account_id = $1 order by seq`, [acct.id]);
    console.log('deliveries when the wait ran out:', JSON.stringify(state.rows), 'events', JSON.stringify(undispatched.rows), 'log', JSON.stringify(await deliveries(acct, hook.id)), 'received', r.received.length);
    throw err;
  });
  for (const got of r.received) {
    assert.equal(got.path, '/paddock?x=1');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.ok(verifyStandardWebhook(hook.secret, got.headers, got.body), `signature of ${got.body}`);
    const tampered = `${hook.secret.slice(0, 10)}${hook.secret[10] === 'A' ? 'B' : 'A'}${hook.secret.slice(11)}`;
    assert.equal(verifyStandardWebhook(tampered, got.headers, got.body), false);
    assert.equal(verifyStandardWebhook(hook.secret, got.headers, got.body.replace('sandbox', 'sandbax')), false);
    const body = JSON.parse(got.body);
    assert.equal(got.headers['webhook-id'], body.id);
    assert.deepEqual(body, events.find((e) => e.id === body.id));
  }
  // At least once: an attempt the receiver answered too late (a loaded machine) is sent again,
  // with the same webhook-id. Each event's first arrival is what the order is judged on.
  const firsts = r.received.filter((x, i) => r.received.findIndex((y) => y.headers['webhook-id'] === x.headers['webhook-id']) === i);
  assert.deepEqual(firsts.map((x) => JSON.parse(x.body).id as string).sort(), events.map((e) => e.id).sort(), 'every event, none other');
  for (const id of sandboxIds) {
    const order = firsts.map((x) => JSON.parse(x.body)).filter((e) => e.data.sandbox?.id === id).map((e) => e.type);
    assert.deepEqual(order.filter((t) => t !== 'sandbox.running'), ['sandbox.created', 'sandbox.destroyed'], `${id}: ${order.join(', ')}`);
    assert.equal(order[0], 'sandbox.created');
    assert.equal(order.at(-1), 'sandbox.destroyed');
  }
  // The attempt is logged once the receiver has answered.
  const log = await eventually('every delivery logged', 10_000, async () => {
    const l = await deliveries(acct, hook.id);
    return new Set(l.filter((d) => d.statusCode === 200).map((d) => d.eventId)).size >= events.length ? l : undefined;
  });
  assert.ok(log.every((d) => d.statusCode === 200 || /no answer within/.test(d.error)), JSON.stringify(log));
});

test('an event no endpoint could receive is recorded dispatched, with no fan-out; an endpoint added later gets the events after it', async () => {
  const r = await receiverAt('late.test');
  const acct = await newAccount(url, 'no-endpoint-yet');
  const events = async () =>
    (await stack.apis[0]!.deps.pg.query<{ id: string; type: string; created_at: Date; dispatched_at: Date | null }>(
      'select id, type, created_at, dispatched_at from events where account_id = $1 order by seq',
      [acct.id],
    )).rows;
  const created = await createSandbox(url, acct.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const before = await events();
  assert.deepEqual(before.map((e) => e.type), ['sandbox.created', 'sandbox.running']);
  // Dispatched by the statement that recorded it (now() is its transaction's start, as created_at
  // is), not later by a dispatch job.
  for (const e of before) assert.equal(e.dispatched_at?.getTime(), e.created_at.getTime(), `${e.type} recorded dispatched`);

  await addWebhook(acct, { url: 'https://late.test/' });
  const destroyed = await call(url, 'DELETE', `/v1/sandboxes/${created.body.id}`, { token: acct.key });
  assert.equal(destroyed.status, 200, JSON.stringify(destroyed.body));
  const after = (await events()).filter((e) => !before.some((b) => b.id === e.id));
  assert.deepEqual(after.map((e) => e.type), ['sandbox.destroyed']);
  await eventually('the destroyed event delivered', 30_000, async () => (r.received.length > 0 ? true : undefined));
  const dispatched = (await events()).find((e) => e.id === after[0]!.id)!;
  assert.ok(dispatched.dispatched_at && dispatched.dispatched_at > dispatched.created_at, 'dispatched by its job, after it was recorded');
  await sleep(500);
  assert.deepEqual(r.received.map((x) => JSON.parse(x.body).type), ['sandbox.destroyed'], 'only the event after the endpoint');
});

test('a 500 and a timeout are retried with backoff, the attempts logged with their next retry; only event types subscribed to are sent', async () => {
  const r = await receiverAt('down.test', (_x, i) => (i === 0 ? { status: 500 } : i === 1 ? { hang: true } : { status: 204 }));
  const acct = await newAccount(url, 'retries');
  const hook = await addWebhook(acct, { url: 'https://down.test/', events: ['sandbox.destroyed'] });
  assert.deepEqual(hook.events, ['sandbox.destroyed']);
  const { body: s } = await createSandbox(url, acct.key);
  await call(url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: acct.key });
  await eventually('delivered on the third attempt', 20_000, async () => ((await deliveries(acct, hook.id)).length >= 3 ? true : undefined));
  const log = (await deliveries(acct, hook.id)).reverse();
  assert.deepEqual(log.map((d) => d.attempt), [1, 2, 3]);
  assert.deepEqual(log.map((d) => d.statusCode), [500, null, 204]);
  assert.equal(log[0].eventType, 'sandbox.destroyed');
  assert.match(log[0].error, /500/);
  assert.match(log[1].error, /no answer within 2000 ms/);
  assert.ok(log[1].durationMs >= 1900 && log[1].durationMs < 4000, String(log[1].durationMs));
  assert.equal(log[2].error, null);
  assert.equal(log[2].nextRetryAt, null);
  for (const d of log.slice(0, 2)) {
    const wait = Date.parse(d.nextRetryAt) - Date.parse(d.createdAt);
    assert.ok(wait >= 50 && wait <= 1500, `next retry ${wait} ms after`);
  }
  // Same event, same webhook-id on every try; nothing else was sent.
  assert.equal(new Set(r.received.map((x) => x.headers['webhook-id'])).size, 1);
  assert.equal(r.received.length, 3);
});

test('one slow endpoint holds at most its concurrency bound, and another endpoint is not held up', async () => {
  const slow = await receiverAt('slow.test', () => ({ status: 200, delayMs: 700 }));
  const fast = await receiverAt('fast.test');
  const acct = await newAccount(url, 'concurrency');
  const slowHook = await addWebhook(acct, { url: 'https://slow.test/' });
  for (let i = 0; i < 8; i++) assert.equal((await call(url, 'POST', `/v1/webhooks/${slowHook.id}/test`, { token: acct.key })).status, 202);
  const fastHook = await addWebhook(acct, { url: 'https://fast.test/' });
  await eventually('the slow one busy', 5000, async () => (slow.inFlight() >= 2 ? true : undefined), 20);
  const sent = Date.now();
  assert.equal((await call(url, 'POST', `/v1/webhooks/${fastHook.id}/test`, { token: acct.key })).status, 202);
  await eventually('the fast one served', 5000, async () => (fast.received.length === 1 ? true : undefined), 20);
  assert.ok(slow.received.length < 8, 'the slow endpoint is still working through its queue');
  await eventually('all eight slow ones', 20_000, async () => (slow.received.length === 8 ? true : undefined));
  assert.equal(slow.maxInFlight(), 2);
  // Held up behind the slow one's queue, the fast one would arrive after its last: by the order of
  // arrivals, not a time bound that a loaded machine can pass (at least three 700 ms rounds remain
  // of the slow queue when the fast one is sent).
  const waited = fast.received[0]!.receivedAt - sent;
  assert.ok(fast.received[0]!.receivedAt < slow.received[7]!.receivedAt, `fast endpoint waited ${waited} ms, behind the slow one's last`);
});

test('refused addresses are never connected to: names resolving to loopback, IPv6 loopback, link-local, private, mapped; a redirect to one; a rebinding name', async () => {
  const acct = await newAccount(url, 'ssrf');
  const refused: Record<string, string[]> = {
    'loop.test': ['127.0.0.1'],
    'loop6.test': ['::1'],
    'metadata.test': ['169.254.169.254'],
    'private.test': ['10.1.2.3'],
    'private6.test': ['fd00:ec2::254'],
    'mapped.test': ['::ffff:127.0.0.1'],
    'cgnat.test': ['100.100.100.200'],
    'mixed.test': ['203.0.113.200', '192.168.1.1'],
  };
  for (const [name, answer] of Object.entries(refused)) net.dns(name, answer);
  const before = net.connects.length;
  const hooks = [];
  for (const name of Object.keys(refused)) {
    const hook = await addWebhook(acct, { url: `https://${name}/hook` });
    hooks.push(hook);
    assert.equal((await call(url, 'POST', `/v1/webhooks/${hook.id}/test`, { token: acct.key })).status, 202);
  }
  for (const hook of hooks) {
    const log = await eventually(`a refused attempt for ${hook.url}`, 10_000, async () => {
      const l = await deliveries(acct, hook.id);
      return l.length > 0 ? l : undefined;
    });
    assert.equal(log[0].statusCode, null);
    assert.match(log[0].error, /not connected to/);
  }
  const forbidden = Object.values(refused).flat();
  assert.deepEqual(net.connects.slice(before).filter((c) => forbidden.includes(c.address)), []);

  // A redirect to the metadata address is not followed.
  const redirecting = await receiverAt('redirect.test', () => ({ status: 302, headers: { location: 'https://169.254.169.254/latest/meta-data/' } }));
  const hook = await addWebhook(acct, { url: 'https://redirect.test/' });
  await call(url, 'POST', `/v1/webhooks/${hook.id}/test`, { token: acct.key });
  const log = await eventually('the redirect answered', 10_000, async () => {
    const l = await deliveries(acct, hook.id);
    return l.length > 0 ? l : undefined;
  });
  assert.equal(log[0].statusCode, 302);
  assert.match(log[0].error, /redirect \(302\) not followed/);
  assert.equal(redirecting.received.length >= 1, true);

  // DNS rebinding: public on the first lookup, loopback on the next; the second attempt never connects.
  const rebinder = await receiverAt('rebind.test', () => ({ status: 500 }));
  const publicAddress = `203.0.113.${nextAddress - 1}`;
  let lookups = 0;
  net.dns('rebind.test', () => (lookups++ === 0 ? [publicAddress] : ['127.0.0.1']));
  const rebind = await addWebhook(acct, { url: 'https://rebind.test/' });
  const mark = net.connects.length;
  await call(url, 'POST', `/v1/webhooks/${rebind.id}/test`, { token: acct.key });
  const attempts = await eventually('two attempts', 10_000, async () => {
    const l = await deliveries(acct, rebind.id);
    return l.length >= 2 ? l.reverse() : undefined;
  });
  assert.equal(attempts[0].statusCode, 500);
  assert.equal(attempts[1].error, 'rebind.test does not resolve to an address webhooks may be sent to: not connected to');
  assert.equal(rebinder.received.length, 1);
  const rebindConnects = net.connects.slice(mark).filter((c) => c.servername === 'rebind.test');
  assert.deepEqual(rebindConnects.map((c) => c.address), [publicAddress]);
  assert.ok(net.connects.every((c) => c.address.startsWith('203.0.113.')), JSON.stringify(net.connects.map((c) => c.address)));
  await call(url, 'DELETE', `/v1/webhooks/${rebind.id}`, { token: acct.key });
});

test('the delivery log never says what a refused name resolved to, and reads the same for a name that does not exist', async () => {
  const acct = await newAccount(url, 'dns-answers');
  const answers: Record<string, string[] | undefined> = {
    'vm.test': ['127.0.0.1'],
    'vm6.test': ['::1'],
    'db.test': ['10.9.8.7'],
    'meta.test': ['169.254.169.254'],
    'mapped.test': ['::ffff:192.168.0.1'],
    'half.test': ['203.0.113.201', 'fd12:3456::1'],
    'empty.test': [],
    'nowhere.test': undefined, // no such name: the resolver's ENOTFOUND
  };
  for (const [name, answer] of Object.entries(answers)) if (answer) net.dns(name, answer);
  const before = net.connects.length;
  const hooks = new Map<string, string>();
  for (const name of Object.keys(answers)) {
    const hook = await addWebhook(acct, { url: `https://${name}/in` });
    hooks.set(name, hook.id);
    assert.equal((await call(url, 'POST', `/v1/webhooks/${hook.id}/test`, { token: acct.key })).status, 202);
  }
  const addresses = Object.values(answers).flat().filter((a): a is string => a !== undefined);
  for (const [name, id] of hooks) {
    const log = await eventually(`an attempt for ${name}`, 10_000, async () => {
      const l = await deliveries(acct, id);
      return l.length > 0 ? l : undefined;
    });
    assert.equal(log[0].statusCode, null);
    assert.equal(log[0].error, `${name} does not resolve to an address webhooks may be sent to: not connected to`);
  }
  // Nowhere the account can read: the delivery logs, its endpoints, its events.
  const seen = JSON.stringify([
    ...(await Promise.all([...hooks.values()].map((id) => deliveries(acct, id)))),
    (await call(url, 'GET', '/v1/webhooks', { token: acct.key })).body,
    (await call(url, 'GET', '/v1/events', { token: acct.key })).body,
  ]);
  for (const a of addresses) assert.ok(!seen.includes(a), `${a} shown to the account`);
  assert.doesNotMatch(seen, /loopback|private|link-local|metadata|unique local|resolves to/i);
  const ours = net.connects.slice(before).filter((c) => hooks.has(c.servername));
  assert.deepEqual(ours, [], 'none connected to, not even the one with a public address among its answers');
});

test('URLs refused when added: not https, localhost, IP literals of refused ranges, credentials; limits and ownership', async () => {
  const acct = await newAccount(url, 'urls');
  const other = await newAccount(url, 'urls-other');
  const urls = [
    'http://hooks.test/',
    'http://localhost:8080/',
    'https://localhost/',
    'https://app.localhost/',
    'https://localhost./',
    'https://LOCALHOST../',
    'https://app.localhost./',
    'https://127.0.0.1/',
    'https://[::1]/',
    'https://169.254.169.254/latest',
    'https://10.0.0.1/',
    'https://[fe80::1]/',
    'https://[::ffff:10.0.0.1]/',
    'https://0.0.0.0/',
    'https://user:pass@hooks.test/',
    'ftp://hooks.test/',
  ];
  for (const u of urls) assertProblem(await call(url, 'POST', '/v1/webhooks', { token: acct.key, body: { url: u } }), 422, 'webhook_url_not_allowed');
  for (const body of [{ url: 'not a url' }, {}, { url: 'https://hooks.test/', events: ['sandbox.nope'] }, { url: 'https://hooks.test/', events: [] }, { url: 'https://hooks.test/', extra: 1 }]) {
    const res = await call(url, 'POST', '/v1/webhooks', { token: acct.key, body });
    assert.ok(res.status === 400 || res.status === 422, JSON.stringify(res.body));
  }
  assert.equal((await call(url, 'GET', '/v1/webhooks', { token: acct.key })).body.data.length, 0);
  const hook = await addWebhook(acct, { url: 'https://hooks.test/' });
  for (const [method, path] of [['DELETE', `/v1/webhooks/${hook.id}`], ['GET', `/v1/webhooks/${hook.id}/deliveries`], ['POST', `/v1/webhooks/${hook.id}/test`], ['POST', `/v1/webhooks/${hook.id}/secret`]] as const) {
    assertProblem(await call(url, method, path, { token: other.key }), 404, 'webhook_not_found');
    assertProblem(await call(url, method, path.replace(hook.id, 'wh_000000000000000000000000'), { token: acct.key }), 404, 'webhook_not_found');
  }
  for (let i = 1; i < stack.config.PADDOCK_WEBHOOK_MAX_PER_ACCOUNT; i++) await addWebhook(acct, { url: `https://hooks.test/${i}` });
  assertProblem(await call(url, 'POST', '/v1/webhooks', { token: acct.key, body: { url: 'https://hooks.test/x' } }), 422, 'webhook_limit_reached');
  assert.equal((await call(url, 'DELETE', `/v1/webhooks/${hook.id}`, { token: acct.key })).status, 204);
  assertProblem(await call(url, 'DELETE', `/v1/webhooks/${hook.id}`, { token: acct.key }), 404, 'webhook_not_found');
});

test('secret rotation: the new secret is shown once, and both sign until the window ends', async () => {
  const r = await receiverAt('rotate.test');
  const acct = await newAccount(url, 'rotate');
  const hook = await addWebhook(acct, { url: 'https://rotate.test/' });
  const rotated = await call(url, 'POST', `/v1/webhooks/${hook.id}/secret`, { token: acct.key });
  assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
  assert.notEqual(rotated.body.secret, hook.secret);
  assert.ok(Date.parse(rotated.body.previousSecretExpiresAt) > Date.now() + 23 * 3600_000);
  await call(url, 'POST', `/v1/webhooks/${hook.id}/test`, { token: acct.key });
  await eventually('the test event', 10_000, async () => (r.received.length === 1 ? true : undefined));
  const got = r.received[0]!;
  assert.equal(JSON.parse(got.body).type, 'webhook.test');
  assert.equal(String(got.headers['webhook-signature']).split(' ').length, 2);
  assert.ok(verifyStandardWebhook(rotated.body.secret, got.headers, got.body));
  assert.ok(verifyStandardWebhook(hook.secret, got.headers, got.body));
});

test('an endpoint failing for the whole retry window is disabled, with a webhook.disabled event; a test it answers re-enables it', async () => {
  const shortNet = testNetwork(cert.cert);
  const short = await startSandboxStack({
    webhookTransport: shortNet.transport,
    overrides: {
      // 7.2 s from the event: room for three tries even when the worker picks each up late
      // (a loaded run fitted two into 3.6 s).
      PADDOCK_WEBHOOK_RETRY_HOURS: '0.002',
      PADDOCK_WEBHOOK_BACKOFF_BASE_MS: '100',
      PADDOCK_WEBHOOK_BACKOFF_MAX_SECONDS: '1',
      PADDOCK_WEBHOOK_TIMEOUT_SECONDS: '1',
    },
  });
  let failing = true;
  const r = await startReceiver(cert, () => ({ status: failing ? 503 : 200 }));
  shortNet.host(['flaky.test'], '203.0.113.250', r);
  const acct = await newAccount(short.url, 'disable');
  const res = await call(short.url, 'POST', '/v1/webhooks', { token: acct.key, body: { url: 'https://flaky.test/' } });
  const hook = res.body;
  const { body: first } = await createSandbox(short.url, acct.key);
  await call(short.url, 'DELETE', `/v1/sandboxes/${first.id}`, { token: acct.key });
  const disabled = await eventually('disabled', 30_000, async () => {
    const l = (await call(short.url, 'GET', '/v1/webhooks', { token: acct.key })).body.data[0];
    return l.disabledAt ? l : undefined;
  });
  assert.match(disabled.disabledReason, /retry window/);
  const events = (await call(short.url, 'GET', '/v1/events', { token: acct.key })).body.data as any[];
  const gone = events.filter((e) => e.type === 'webhook.disabled');
  assert.equal(gone.length, 1);
  assert.equal(gone[0].data.webhook.id, hook.id);
  const attempts = (await call(short.url, 'GET', `/v1/webhooks/${hook.id}/deliveries`, { token: acct.key })).body.data as any[];
  assert.ok(attempts.length >= 3, `${attempts.length} attempts`);
  assert.ok(attempts.every((a) => a.statusCode === 503));
  assert.ok(attempts.some((a) => a.nextRetryAt === null), 'the last attempt has no next retry');
  // Disabled: a new sandbox's events are not sent.
  const before = r.received.length;
  const { body: s } = await createSandbox(short.url, acct.key);
  await call(short.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: acct.key });
  await sleep(1000);
  assert.equal(r.received.length, before);
  // The receiver is fixed; a test event it answers re-enables the endpoint.
  failing = false;
  await call(short.url, 'POST', `/v1/webhooks/${hook.id}/test`, { token: acct.key });
  await eventually('re-enabled', 10_000, async () => {
    const l = (await call(short.url, 'GET', '/v1/webhooks', { token: acct.key })).body.data[0];
    return l.disabledAt === null ? true : undefined;
  });
});

test('a certificate that does not name the host fails the delivery (the receiver is never trusted on its address alone)', async () => {
  const r = await receiverAt('unnamed.test');
  const acct = await newAccount(url, 'tls');
  const hook = await addWebhook(acct, { url: 'https://unnamed.test/' });
  await call(url, 'POST', `/v1/webhooks/${hook.id}/test`, { token: acct.key });
  const log = await eventually('a failed attempt', 10_000, async () => {
    const l = await deliveries(acct, hook.id);
    return l.length > 0 ? l : undefined;
  });
  assert.equal(log[0].statusCode, null);
  assert.match(log[0].error, /ERR_TLS_CERT_ALTNAME_INVALID|certificate/i);
  assert.equal(r.received.length, 0);
  await call(url, 'DELETE', `/v1/webhooks/${hook.id}`, { token: acct.key });
});
