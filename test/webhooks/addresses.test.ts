import { test } from 'node:test';
import assert from 'node:assert/strict';
import { refusedAddressReason } from '../../shared/webhooks/addresses.ts';
import { checkWebhookUrl } from '../../shared/webhooks/url-policy.ts';
import { ORDER_RECHECK_MAX_MS, orderWaitMs, retryDelayMs } from '../../shared/webhooks/backoff.ts';

// The address policy on its own (no network): what a delivery may connect to.

test('refused: loopback, private, shared, link-local, metadata, multicast, reserved, unspecified, in IPv4 and IPv6 and IPv4 inside IPv6', () => {
  const refused = [
    '127.0.0.1', '127.255.255.254', '0.0.0.0', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.0.1', '100.64.0.1',
    '100.100.100.200', '169.254.169.254', '168.63.129.16', '192.0.0.192', '198.18.0.1', '224.0.0.1', '240.0.0.1', '255.255.255.255',
    '::', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '64:ff9b::a9fe:a9fe', '2002:7f00:1::',
    'fc00::1', 'fd00:ec2::254', 'fe80::1', 'fe80::1%eth0', 'fec0::1', 'ff02::1', '::127.0.0.1', '2001::1', 'not-an-ip', '1.2.3',
  ];
  for (const a of refused) assert.ok(refusedAddressReason(a), `${a} should be refused`);
});

test('allowed: public addresses, IPv4 and IPv6', () => {
  for (const a of ['203.0.113.10', '93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '2a00:1450:4001::200e', '::ffff:93.184.216.34']) {
    assert.equal(refusedAddressReason(a), undefined, a);
  }
});

test('URLs: https only (the local exception only with the setting, only for localhost and 127.0.0.1), no credentials', () => {
  assert.ok('target' in checkWebhookUrl('https://hooks.example/x', false));
  for (const u of ['http://hooks.example/', 'http://localhost/', 'https://localhost/', 'https://10.1.1.1/', 'https://[::1]/', 'https://a:b@hooks.example/', 'file:///etc/passwd', 'x'])
    assert.ok('refused' in checkWebhookUrl(u, false), u);
  const local = checkWebhookUrl('http://127.0.0.1:8080/hook', true);
  assert.ok('target' in local && local.target.local && local.target.port === 8080);
  assert.ok('refused' in checkWebhookUrl('http://10.0.0.1/', true));
  assert.ok('refused' in checkWebhookUrl('http://hooks.example/', true));
});

test('backoff: exponential, capped, jittered between half and all of the step, the same for the same delivery and try', () => {
  for (let attempt = 1; attempt <= 20; attempt++) {
    const ceiling = Math.min(3_600_000, 5000 * 2 ** (attempt - 1));
    const d = retryDelayMs('wh_x:evt_y', attempt, 5000, 3_600_000);
    assert.ok(d >= ceiling / 2 && d <= ceiling, `${attempt}: ${d}`);
    assert.equal(retryDelayMs('wh_x:evt_y', attempt, 5000, 3_600_000), d);
  }
  const spread = new Set(Array.from({ length: 20 }, (_, i) => retryDelayMs(`wh_${i}:evt`, 3, 5000, 3_600_000)));
  assert.ok(spread.size > 10, 'deliveries that failed together retry apart');
});

test('waiting behind an earlier delivery: until it is due; past due, longer the later it is, never a busy loop', () => {
  const now = Date.parse('2026-11-28T10:00:00Z');
  assert.equal(orderWaitMs(new Date(now + 3000), now), 3050, 'a retry due later: until then');
  assert.equal(orderWaitMs(new Date(now - 20), now), 50, 'being sent right now: look again soon');
  assert.equal(orderWaitMs(new Date(now - 2000), now), 500);
  // A lost job, which the sweep queues again only after minutes: a few seconds between looks.
  for (const late of [30_000, 120_000, 3_600_000]) assert.equal(orderWaitMs(new Date(now - late), now), ORDER_RECHECK_MAX_MS);
  let waited = 0;
  let looks = 0;
  while (waited < 120_000) {
    waited += orderWaitMs(new Date(now - 1000), now + waited);
    looks++;
  }
  assert.ok(looks < 60, `${looks} looks in the two minutes a lost job waits for the sweep`);
});
