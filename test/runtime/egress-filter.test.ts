import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { BLOCKED_V4, BLOCKED_V6, egressRuleset, SLIRP } from '../../shared/runtime/local/egress-filter.ts';

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

const ruleset = egressRuleset({ hostAddresses: ['127.0.0.1', '203.0.113.77', '::1', 'fe80::1%eth0', '2001:db8::5'] });

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

test('public and documentation addresses are not refused; the one allowed private one is slirp DNS on port 53', () => {
  const v4 = setOf(ruleset, 'blocked4');
  for (const address of ['1.1.1.1', '8.8.8.8', '198.51.100.2', '192.0.2.10', '203.0.113.9', '172.32.0.1', '100.128.0.1', '11.0.0.1']) {
    assert.ok(!coveredV4(address, v4), `${address} is refused`);
  }
  const lines = ruleset.split('\n').map((line) => line.trim());
  const dns = lines.findIndex((line) => line.startsWith(`ip daddr ${SLIRP.dns} `));
  assert.match(lines[dns]!, /th dport 53 accept$/);
  assert.ok(dns < lines.findIndex((line) => line.includes('@blocked4')), 'the DNS exception comes before the refusals');
  // Nothing else is accepted ahead of the refusals but the sandbox's own loopback device.
  const accepts = lines.filter((line) => line.endsWith('accept') && !line.startsWith('type '));
  assert.deepEqual(accepts, ['oifname "lo" accept', lines[dns]]);
  assert.match(ruleset, /policy accept;/);
  assert.equal(lines.filter((line) => /daddr @blocked[46] .*reject/.test(line)).length, 4);
});

test('nft accepts the ruleset as written (a dry run: nothing is installed)', { skip: process.getuid?.() !== 0 && 'nft --check needs root' }, () => {
  try {
    execFileSync('nft', ['--version'], { stdio: 'ignore' });
  } catch {
    assert.fail('nft is not installed: scripts/services.ts installs nftables');
  }
  execFileSync('nft', ['--check', '-f', '-'], { input: ruleset, stdio: ['pipe', 'ignore', 'pipe'] });
});
