import { test } from 'node:test';
import assert from 'node:assert/strict';
import { render } from 'ink-testing-library';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { eventually } from '../helpers/eventually.ts';
import { makeCertificate, startReceiver, testNetwork, verifyStandardWebhook } from '../helpers/webhooks.ts';
import { failsWith, json, newSession, ok, signedUpUser, spawnCli } from './cli-helpers.ts';
import { h } from '../../cli/ui/h.ts';
import { SessionTable } from '../../cli/ui/session-table.ts';
import type { Sandbox } from '../../cli/api/types.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

// `paddock events [-f]` and `paddock webhooks add|ls|rm|test|deliveries` against a real stack,
// webhooks delivered to a real HTTPS receiver on the test network; and the picker's warning
// before a session's cap.

const cert = makeCertificate(['cli-hooks.test']);
const receiver = await startReceiver(cert);
const net = testNetwork(cert.cert);
net.host(['cli-hooks.test'], '203.0.113.77', receiver);
const stack = await startSandboxStack({ webhookTransport: net.transport, overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });

test('webhooks add prints the secret once; ls, test, deliveries and rm', async () => {
  const user = await signedUpUser(stack.url, 'cliwh');
  const added = await user.run(['webhooks', 'add', 'https://cli-hooks.test/in', '--event', 'sandbox.created,sandbox.destroyed', '-d', 'from the cli']);
  const secret = ok(added).trim();
  assert.match(secret, /^whsec_/);
  assert.match(added.stderr, /Webhook (wh_[0-9a-z]+) added .*shown only now/);
  const id = /Webhook (wh_[0-9a-z]+)/.exec(added.stderr)![1]!;

  const table = ok(await user.run(['webhooks', 'ls']));
  assert.match(table, /^ID +URL +EVENTS +STATE +CREATED$/m);
  assert.match(table, new RegExp(`^${id} +https://cli-hooks.test/in +sandbox.created,sandbox.destroyed +enabled`, 'm'));
  assert.ok(!table.includes(secret));
  const listed = json(await user.run(['webhooks', 'ls', '--json']));
  assert.deepEqual(listed.map((w: { id: string }) => w.id), [id]);

  const sent = await user.run(['webhooks', 'test', id]);
  const eventId = ok(sent).trim();
  assert.match(eventId, /^evt_/);
  await eventually('the test event received', 10_000, async () => (receiver.received.some((r) => r.headers['webhook-id'] === eventId) ? true : undefined));
  const got = receiver.received.find((r) => r.headers['webhook-id'] === eventId)!;
  assert.ok(verifyStandardWebhook(secret, got.headers, got.body));
  const attempts = await eventually('the attempt logged', 5000, async () => {
    const list = json(await user.run(['webhooks', 'deliveries', id, '--json']));
    return list.length ? list : undefined;
  });
  assert.equal(attempts[0].statusCode, 200);
  assert.match(ok(await user.run(['webhooks', 'deliveries', id])), new RegExp(`^\\S+ +${eventId} +webhook.test +1 +200 `, 'm'));

  failsWith(await user.run(['webhooks', 'add', 'http://cli-hooks.test/']), 'webhook_url_not_allowed', 1);

  // A name that resolves to loopback: the log says it is not allowed, never what it resolved to.
  net.dns('cli-internal.test', ['127.0.0.1']);
  ok(await user.run(['webhooks', 'add', 'https://cli-internal.test/']));
  const internal = json(await user.run(['webhooks', 'ls', '--json'])).find((w: { url: string }) => w.url === 'https://cli-internal.test/').id as string;
  ok(await user.run(['webhooks', 'test', internal]));
  const refused = await eventually('the refused attempt logged', 10_000, async () => {
    const out = ok(await user.run(['webhooks', 'deliveries', internal]));
    return out.includes('not connected to') ? out : undefined;
  });
  assert.match(refused, /cli-internal\.test does not resolve to an address webhooks may be sent to: not connected to/);
  assert.doesNotMatch(refused, /127\.0\.0\.1|loopback/);
  ok(await user.run(['webhooks', 'rm', internal]));
  assert.equal(ok(await user.run(['webhooks', 'rm', id])), '');
  const again = await user.run(['webhooks', 'rm', id]);
  failsWith(again, 'webhook_not_found', 1);
  assert.match(again.stderr, /Hint: .*webhooks ls/);
});

test('events lists the account’s events; events -f keeps printing new ones as they happen', async () => {
  const user = await signedUpUser(stack.url, 'clievents');
  const first = await newSession(user);
  const lines = ok(await user.run(['events'])).trim().split('\n');
  assert.equal(lines.length, 2);
  assert.match(lines[0]!, new RegExp(`sandbox\\.created +${first} pending +evt_`));
  assert.match(lines[1]!, new RegExp(`sandbox\\.running +${first} running +evt_`));
  const listed = json(await user.run(['events', '--json']));
  assert.deepEqual(listed.map((e: { type: string }) => e.type), ['sandbox.created', 'sandbox.running']);

  const follower = spawnCli(user.home, ['events', '-f', '--json']);
  let out = '';
  follower.stdout.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await eventually('the past events', 10_000, async () => (out.split('\n').filter(Boolean).length >= 2 ? true : undefined));
    ok(await user.run(['session', 'rm', first]));
    const events = await eventually('the destroy, as it happens', 15_000, async () => {
      const parsed = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; data: { sandbox?: { id: string } } });
      return parsed.some((e) => e.type === 'sandbox.destroyed') ? parsed : undefined;
    });
    assert.deepEqual(events.map((e) => e.type), ['sandbox.created', 'sandbox.running', 'sandbox.destroyed']);
    assert.equal(events[2]!.data.sandbox!.id, first);
  } finally {
    follower.kill('SIGINT');
  }
  failsWith(await user.run(['events', '--after', 'evt_000000000000000000000000']), 'event_not_found', 1);
});

test('the picker warns of a session near its cap, with the time left', () => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  const session = (id: string, leftS: number): Sandbox => ({
    id,
    state: 'active',
    status: 'running',
    image: 'img',
    createdAt: new Date(now - 60_000).toISOString(),
    readyAt: new Date(now - 60_000).toISOString(),
    expiresAt: new Date(now + leftS * 1000).toISOString(),
    destroyedAt: null,
    destroyReason: null,
    failureMessage: null,
    snapshotOnDestroy: false,
    finalSnapshotId: null,
    network: { egress: 'none' },
    networkRefused: 0,
    metadata: {},
  });
  const frame = render(h(SessionTable, { sessions: [session('sbx_soon', 252), session('sbx_later', 1200)], selected: 0, now })).lastFrame() ?? '';
  assert.match(frame, /⚠ sbx_soon expiring in 04:12/);
  assert.doesNotMatch(frame, /sbx_later expiring/);
});
