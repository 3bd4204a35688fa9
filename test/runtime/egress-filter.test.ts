import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { egressRuleset, policyUpdate, SLIRP } from '../../shared/runtime/local/egress-filter.ts';
import { BLOCKED_V4, BLOCKED_V6 } from '../../shared/network/floor.ts';
import type { NetworkPolicy } from '../../shared/network/policy.ts';

// The egress filter's own tests: which destinations a sandbox with network is refused, read from
// the ruleset itself. No traffic is sent; test/security/network.test.ts shows the rules at work
// against loopback and a test host of its own.

/** The ranges of one set in the generated script. */
function setOf(ruleset: string, name: string): string[] {
  const found = new RegExp(`set ${name} \\{[^}]*elements = \\{ ([^}]*) \\}`).exec(ruleset);
  assert.ok(found, `no set ${name} in\n${ruleset}`);
  return found[1]!.split(', ');
}

function ipv4ToInt(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** Whether an IPv4 address falls in one of the CIDRs. */
function coveredV4(address: string, cidrs: string[]): boolean {
  const value = ipv4ToInt(address);
  return cidrs.some((cidr) => {
    const [base, bits = '32'] = cidr.split('/');
    if (!base!.includes('.')) return false;
    const size = 2 ** (32 - Number(bits));
    const start = ipv4ToInt(base!);
    return value >= start && value < start + size;
  });
}

/** The tag of an installed policy (its named sets', its connections' mark). */
const TAG = 0x5eed;
const HOST = ['127.0.0.1', '203.0.113.77', '::1', 'fe80::1%eth0', '2001:db8::5'];
const ruleset = egressRuleset({ hostAddresses: HOST, installed: { policy: { egress: 'all' }, tag: TAG } });

test('every refused IPv4 range is in the ruleset, and each kind of local address falls in one', () => {
  const v4 = setOf(ruleset, 'blocked4');
  for (const range of BLOCKED_V4) assert.ok(v4.includes(range), `${range} is missing`);
  const mustRefuse = {
    loopback: ['127.0.0.1', '127.255.255.254'],
    private: ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.254', '192.168.0.1', '192.168.255.255'],
    'link-local and metadata': ['169.254.0.1', '169.254.169.254'],
    'carrier-grade NAT': ['100.64.0.1', '100.127.255.254'],
    multicast: ['224.0.0.1', '239.255.255.250'],
    broadcast: ['255.255.255.255'],
    'this network': ['0.0.0.0', '0.1.2.3'],
    "slirp's gateway (the host's loopback) and its network": [SLIRP.gateway, SLIRP.address],
  };
  for (const [kind, addresses] of Object.entries(mustRefuse)) {
    for (const address of addresses) assert.ok(coveredV4(address, v4), `${kind}: ${address} is not refused`);
  }
});

test('every refused IPv6 range is in the ruleset: loopback, unique local, link-local, mapped IPv4, multicast', () => {
  const v6 = setOf(ruleset, 'blocked6');
  for (const range of BLOCKED_V6) assert.ok(v6.includes(range), `${range} is missing`);
  for (const range of ['::/127', 'fc00::/7', 'fe80::/10', '::ffff:0:0/96', 'ff00::/8']) assert.ok(BLOCKED_V6.includes(range), range);
});

test("the host's own addresses are refused, whatever range they are in", () => {
  assert.ok(setOf(ruleset, 'blocked4').includes('203.0.113.77/32'));
  const v6 = setOf(ruleset, 'blocked6');
  assert.ok(v6.includes('2001:db8::5/128'));
  assert.ok(v6.includes('fe80::1/128'), 'the zone is dropped from a link-local address');
});

test('public and documentation addresses are not refused by the floor; the one private one a policy may open is slirp DNS on port 53', () => {
  const v4 = setOf(ruleset, 'blocked4');
  for (const address of ['1.1.1.1', '8.8.8.8', '198.51.100.2', '192.0.2.10', '203.0.113.9', '172.32.0.1', '100.128.0.1', '11.0.0.1']) {
    assert.ok(!coveredV4(address, v4), `${address} is refused`);
  }
  const lines = ruleset.split('\n').map((line) => line.trim());
  const dns = lines.findIndex((line) => line.startsWith(`ip daddr ${SLIRP.dns} `));
  assert.match(lines[dns]!, /th dport 53 jump dns$/);
  assert.ok(dns < lines.findIndex((line) => line.includes('@blocked4')), 'the DNS exception comes before the refusals');
  // In the output chain nothing is accepted ahead of the refusals but the sandbox's own loopback
  // (its device, and the pass-through's and the resolver's addresses on it, where a connection
  // or query sent on is still routed by its first destination); the policy's chain comes after them.
  const output = lines.slice(lines.indexOf('chain output {'));
  const accepts = output.filter((line) => line.endsWith('accept') && !line.startsWith('type '));
  assert.deepEqual(accepts, ['oifname "lo" accept', 'ip daddr 127.0.0.55 tcp dport { 80, 443 } accept', 'ip daddr 127.0.0.53 meta l4proto { tcp, udp } th dport 53 accept']);
  assert.match(ruleset, /policy accept;/);
  assert.equal(lines.filter((line) => /daddr @blocked[46] .*counter name "refused" reject/.test(line)).length, 4);
  assert.ok(output.indexOf('jump allowed') > output.findLastIndex((line) => line.includes('@blocked6')), 'the policy is asked only after the floor');
});

/** The lines of one chain of a script. */
function chain(script: string, name: string): string[] {
  const lines = script.split('\n').map((line) => line.trim());
  const start = lines.indexOf(`chain ${name} {`);
  assert.ok(start >= 0, `no chain ${name}`);
  return lines.slice(start + 1, lines.indexOf('}', start));
}

test("each policy's chains: all opens DNS and everything past the floor; none opens nothing; allow its ranges and ports, then refuses, counted", () => {
  const refusals = ['meta l4proto tcp counter name "refused" reject with tcp reset', 'counter name "refused" reject with icmpx admin-prohibited'];
  const all = egressRuleset({ hostAddresses: HOST, installed: { policy: { egress: 'all' }, tag: TAG } });
  assert.deepEqual(chain(all, 'dns'), ['accept']);
  assert.deepEqual(chain(all, 'allowed'), []);
  const none = egressRuleset({ hostAddresses: HOST, installed: { policy: { egress: 'none' }, tag: TAG } });
  assert.deepEqual(chain(none, 'dns'), []);
  assert.deepEqual(chain(none, 'allowed'), refusals);
  const allow = egressRuleset({ hostAddresses: HOST, installed: { policy: { egress: { allow: ['198.51.100.0/24', '203.0.113.9:443', '[2001:db8::/32]:8443'] } }, tag: TAG } });
  assert.deepEqual(chain(allow, 'dns'), [], 'no DNS: the host resolvers would answer any name, and carry what a query spells');
  assert.deepEqual(chain(allow, 'allowed'), [
    'ip daddr 198.51.100.0/24 accept',
    'ip daddr 203.0.113.9/32 meta l4proto { tcp, udp } th dport 443 accept',
    'ip6 daddr 2001:db8::/32 meta l4proto { tcp, udp } th dport 8443 accept',
    ...refusals,
  ]);
  // A change empties both chains and fills them in the one script nft applies as one transaction.
  const update = policyUpdate({ policy: { egress: 'none' }, tag: TAG + 1 }, TAG).split('\n');
  assert.deepEqual(update.slice(10, 14), ['flush chain inet paddock_egress dns', 'flush chain inet paddock_egress allowed', 'flush chain inet paddock_egress pass', 'flush chain ip paddock_dns to_resolver']);
  assert.deepEqual(chain(update.join('\n'), 'allowed'), refusals);
});

test("domain rules: queries to slirp's forwarder go to the resolver, the named sets of the policy's tag open their addresses, the connections they let through are marked; a change replaces the sets", () => {
  const named = egressRuleset({ hostAddresses: HOST, installed: { policy: { egress: { allow: ['pypi.org:443', '*.example.com', '198.51.100.0/24'] } }, tag: TAG } });
  assert.deepEqual(chain(named, 'to_resolver').slice(1), ['ip daddr 10.0.2.3 meta l4proto { tcp, udp } th dport 53 dnat to 127.0.0.53:53']);
  assert.deepEqual(chain(named, 'dns'), [], 'nothing reaches slirp\'s forwarder itself');
  const allowed = chain(named, 'allowed');
  assert.deepEqual(allowed.slice(0, 6), [
    `ct mark ${TAG} accept`,
    'ip daddr @named4_5eed ct mark set 24301 accept',
    'meta l4proto { tcp, udp } ip daddr . th dport @named4p_5eed ct mark set 24301 accept',
    'ip6 daddr @named6_5eed ct mark set 24301 accept',
    'meta l4proto { tcp, udp } ip6 daddr . th dport @named6p_5eed ct mark set 24301 accept',
    'ip daddr 198.51.100.0/24 accept',
  ]);
  const output = chain(named, 'output');
  // The floor is asked before any of it.
  assert.ok(output.findLastIndex((line) => line.includes('@blocked')) < output.indexOf('jump allowed'));
  // HTTP and HTTPS to an address opened for a name go to the pass-through, which checks the name they claim.
  assert.deepEqual(chain(named, 'pass').slice(1), [
    'ip daddr @named4_5eed tcp dport { 80, 443 } dnat ip to 127.0.0.55',
    'ip daddr . tcp dport @named4p_5eed tcp dport { 80, 443 } dnat ip to 127.0.0.55',
  ]);
  // Without domains: no redirect, no named rule, nothing sent to the pass-through.
  const plain = egressRuleset({ hostAddresses: HOST, installed: { policy: { egress: { allow: ['198.51.100.0/24'] } }, tag: TAG } });
  assert.deepEqual(chain(plain, 'to_resolver').slice(1), []);
  assert.deepEqual(chain(plain, 'pass').slice(1), []);
  assert.ok(!chain(plain, 'allowed').some((line) => line.includes('named') || line.includes('ct mark')));
  // A change deletes the old tag's sets and makes the new one's, in the same transaction.
  const update = policyUpdate({ policy: { egress: { allow: ['*.example.com'] } }, tag: TAG + 1 }, TAG);
  for (const set of ['named4_5eed', 'named4p_5eed', 'named6_5eed', 'named6p_5eed']) assert.ok(update.includes(`delete set inet paddock_egress ${set}`), set);
  assert.match(update, /set named4_5eee \{ type ipv4_addr; flags timeout; size 4096; \}/, 'bounded');
  assert.ok(chain(update, 'allowed').includes(`ct mark ${TAG + 1} accept`));
  assert.ok(!chain(update, 'allowed').includes(`ct mark ${TAG} accept`), "the old policy's connections pass no more");
});

test('nft accepts the ruleset as written (a dry run: nothing is installed)', { skip: process.getuid?.() !== 0 && 'nft --check needs root' }, () => {
  try {
    execFileSync('nft', ['--version'], { stdio: 'ignore' });
  } catch {
    assert.fail('nft is not installed: scripts/services.ts installs nftables');
  }
  const policies: NetworkPolicy[] = [{ egress: 'all' }, { egress: 'none' }, { egress: { allow: ['198.51.100.0/24', '[2001:db8::1]:443'] } }, { egress: { allow: ['pypi.org:443', '*.example.com'] } }];
  for (const policy of policies) {
    execFileSync('nft', ['--check', '-f', '-'], { input: egressRuleset({ hostAddresses: HOST, installed: { policy, tag: TAG } }), stdio: ['pipe', 'ignore', 'pipe'] });
    // A change, as applied on top of an installed filter (the check runs both in one transaction).
    // With the answered addresses it carries over into the new policy's sets.
    const change = policyUpdate({ policy, tag: TAG + 1 }, TAG, [
      { family: 4, address: '198.51.100.9', port: 443, seconds: 300 },
      { family: 4, address: '198.51.100.10', seconds: 120 },
      { family: 6, address: '2001:db8::1', seconds: 60 },
    ]);
    assert.match(change, /add element inet paddock_egress named4p_5eee \{ 198\.51\.100\.9 \. 443 timeout 300s \}/);
    execFileSync('nft', ['--check', '-f', '-'], { input: `${egressRuleset({ hostAddresses: HOST, installed: { policy: { egress: 'none' }, tag: TAG } })}\n${change}`, stdio: ['pipe', 'ignore', 'pipe'] });
  }
});

test('a rule reaches nothing of the floor whatever it spells: all of IPv4, loopback, an IPv4-mapped or NAT64 address; the floor is asked first', () => {
  const spelled = ['0.0.0.0/0', '127.0.0.1:5432', '[::ffff:127.0.0.1]', '[::ffff:169.254.169.254]:80', '[64:ff9b::a9fe:a9fe]', '[::1]', '10.0.2.2', '10.0.2.3:53'];
  const script = egressRuleset({ hostAddresses: HOST, installed: { policy: { egress: { allow: spelled } }, tag: TAG } });
  const lines = script.split('\n').map((line) => line.trim());
  const output = lines.slice(lines.indexOf('chain output {'));
  // Every floor refusal comes before the jump to the policy's chain, so no accept there can undo it.
  assert.ok(output.findLastIndex((line) => line.includes('@blocked')) < output.indexOf('jump allowed'));
  // And the one private address a policy can open, DNS, is opened by the dns chain alone, empty here.
  assert.deepEqual(chain(script, 'dns'), []);
  const v6 = setOf(script, 'blocked6');
  for (const mapped of ['::ffff:0:0/96', '64:ff9b::/96', '::/127']) assert.ok(v6.includes(mapped), mapped);
  assert.deepEqual(chain(script, 'allowed').slice(0, 2), ['ip daddr 0.0.0.0/0 accept', 'ip daddr 127.0.0.1/32 meta l4proto { tcp, udp } th dport 5432 accept']);
});
