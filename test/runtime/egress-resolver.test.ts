import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { answeredAddresses, readQuestion, RCODE_NXDOMAIN, RCODE_SERVFAIL } from '../../shared/runtime/local/dns-message.ts';
import { carriedOver, EgressResolver } from '../../shared/runtime/local/egress-resolver.ts';
import type { OpenEntry } from '../../shared/runtime/local/egress-filter.ts';
import { nameRules } from '../../shared/network/rules.ts';
import { parseUpstreams } from '../../shared/network/resolvers.ts';
import type { NetworkPolicy } from '../../shared/network/policy.ts';
import { parseEgressRule } from '../../shared/network/rules.ts';
import { startTestDns } from '../helpers/test-dns.ts';

// Paddock's resolver for a sandbox (shared/runtime/local/egress-resolver.ts) and the DNS it reads
// (dns-message.ts), against messages a hostile sandbox or upstream could send, and a DNS server
// of the test's own on loopback (test/helpers/test-dns.ts). test/sandboxes/network.test.ts runs
// it inside sandboxes.

function name(text: string): Buffer {
  return Buffer.concat([...text.split('.').map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label, 'latin1')])), Buffer.from([0])]);
}

function query(qname: string | Buffer, options: { id?: number; flags?: number; questions?: number; type?: number } = {}): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(options.id ?? 0x1234, 0);
  head.writeUInt16BE(options.flags ?? 0x0100, 2);
  head.writeUInt16BE(options.questions ?? 1, 4);
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(options.type ?? 1, 0);
  tail.writeUInt16BE(1, 2);
  return Buffer.concat([head, typeof qname === 'string' ? name(qname) : qname, tail]);
}

function rcode(message: Buffer | undefined): number {
  assert.ok(message, 'an answer');
  return message.readUInt16BE(2) & 0xf;
}

test('a query is read only when it is one well-formed question: not an answer, not two, not compressed, no dot inside a label, at most 255 bytes; its name lowercase', () => {
  assert.deepEqual(readQuestion(query('PyPI.org'))?.name, 'pypi.org');
  assert.equal(readQuestion(query('pypi.org', { flags: 0x8100 })), undefined, 'an answer');
  assert.equal(readQuestion(query('pypi.org', { questions: 2 })), undefined, 'two questions');
  assert.equal(readQuestion(query(Buffer.from([0xc0, 0x0c]))), undefined, 'a pointer, to itself');
  // One label "pypi.org": not the name pypi.org.
  assert.equal(readQuestion(query(Buffer.concat([Buffer.from([8]), Buffer.from('pypi.org'), Buffer.from([0])]))), undefined);
  assert.equal(readQuestion(query(`${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.org`)), undefined, 'past 255 bytes');
  assert.equal(readQuestion(query('pypi.org').subarray(0, 20)), undefined, 'cut short');
  assert.equal(readQuestion(Buffer.alloc(5)), undefined);
});

test('an answer gives its A and AAAA records through a CNAME, and nothing when it is not the answer to the question or loops', () => {
  const q = query('www.example.org');
  const question = readQuestion(q)!;
  const rr = (type: number, data: Buffer, owner = Buffer.from([0xc0, 0x0c])) => {
    const fixed = Buffer.alloc(10);
    fixed.writeUInt16BE(type, 0);
    fixed.writeUInt16BE(1, 2);
    fixed.writeUInt32BE(42, 4);
    fixed.writeUInt16BE(data.byteLength, 8);
    return Buffer.concat([owner, fixed, data]);
  };
  const answer = (records: Buffer[], id = 0x1234) => {
    const head = Buffer.from(q.subarray(0, 12));
    head.writeUInt16BE(id, 0);
    head.writeUInt16BE(0x8180, 2);
    head.writeUInt16BE(records.length, 6);
    return Buffer.concat([head, q.subarray(12), ...records]);
  };
  const cname = name('edge.cdn.example.net');
  // The CNAME's target is at offset 12 + question + 12 (its record's name and fixed part).
  const targetAt = 12 + (q.byteLength - 12) + 12;
  const v6 = Buffer.alloc(16);
  v6.writeUInt16BE(0x2001, 0);
  v6.writeUInt16BE(0x0db8, 2);
  v6.writeUInt16BE(1, 14);
  const good = answer([rr(5, cname), rr(1, Buffer.from([198, 51, 100, 7]), Buffer.from([0xc0 | (targetAt >> 8), targetAt & 0xff])), rr(28, v6)]);
  assert.deepEqual(answeredAddresses(good, question), [
    { family: 4, address: '198.51.100.7', ttl: 42 },
    { family: 6, address: '2001:db8:0:0:0:0:0:1', ttl: 42 },
  ]);
  assert.equal(answeredAddresses(answer([rr(1, Buffer.from([198, 51, 100, 7]))], 0x4321), question), undefined, 'another id');
  const other = readQuestion(query('evil.example.org'))!;
  assert.equal(answeredAddresses(good, { ...other, id: question.id }), undefined, 'another question');
  const looping = answer([rr(1, Buffer.from([198, 51, 100, 7]), Buffer.from([0xc0, q.byteLength + 0]))]);
  // Its owner name points at itself: followed a bounded number of times, then refused.
  assert.equal(answeredAddresses(looping, question), undefined);
  const overlong = answer([rr(1, Buffer.from([198, 51, 100, 7]))]);
  overlong.writeUInt16BE(9, 6); // says nine records, holds one
  assert.equal(answeredAddresses(overlong, question), undefined);
});

test('the resolver asks upstream only for names the policy allows, opens their addresses outside the floor on the rule\'s port for at least 300 s, answers NXDOMAIN otherwise, and SERVFAIL when nothing answers or its policy was replaced', async () => {
  const dns = await startTestDns();
  dns.set('pypi.org', ['151.101.0.223', '10.1.2.3', '127.0.0.1'], 30);
  dns.set('files.example.com', ['198.51.100.9'], 7200);
  const policy: NetworkPolicy = { egress: { allow: ['pypi.org:443', '*.example.com', '198.51.100.0/24'] } };
  const opened: { tag: number; entries: OpenEntry[] }[] = [];
  const refused: string[] = [];
  let failOpen = false;
  const resolver = new EgressResolver({
    installed: async () => ({ policy, tag: 7 }),
    upstreams: parseUpstreams(dns.address),
    open: async (tag, entries) => {
      if (failOpen) throw new Error('the policy was replaced');
      opened.push({ tag, entries });
    },
    refused: (n) => refused.push(n),
  });

  const pypi = await resolver.answer(query('pypi.org'), 'udp');
  assert.equal(rcode(pypi), 0);
  assert.equal(pypi!.readUInt16BE(6), 3, 'the answer goes on whole, its floor addresses too');
  assert.deepEqual(opened, [{ tag: 7, entries: [{ family: 4, address: '151.101.0.223', port: 443, seconds: 300 }] }], 'only the address outside the floor, on 443');
  assert.equal(rcode(await resolver.answer(query('files.example.com'), 'tcp')), 0);
  assert.deepEqual(opened[1], { tag: 7, entries: [{ family: 4, address: '198.51.100.9', seconds: 3600 }] }, 'every port, at most an hour');
  // Asked again: answered from what it kept (its id the new query's), nothing asked, nothing to open.
  const upstreamAsked = dns.asked().length;
  const again = await resolver.answer(query('pypi.org', { id: 0x0bad }), 'udp');
  assert.equal(again!.readUInt16BE(0), 0x0bad);
  assert.deepEqual(again!.subarray(2), pypi!.subarray(2));
  assert.equal(dns.asked().length, upstreamAsked);
  assert.equal(opened.length, 2);

  for (const refusedName of ['example.com', 'evil.org', 'pypi.org.evil.org', 'xpypi.org']) {
    const answer = await resolver.answer(query(refusedName), 'udp');
    assert.equal(rcode(answer), RCODE_NXDOMAIN, refusedName);
    assert.equal(answer!.readUInt16BE(0), 0x1234, 'its id');
  }
  assert.deepEqual(refused, ['example.com', 'evil.org', 'pypi.org.evil.org', 'xpypi.org']);

  // What a change of policy carries over: the answered names the new rules still cover, on their
  // ports, for the time each had left; the floor's addresses were never among them.
  const answered = resolver.answeredNames();
  assert.deepEqual(answered.map((a) => `${a.name} ${a.address}`).sort(), ['files.example.com 198.51.100.9', 'pypi.org 151.101.0.223']);
  const now = Date.now();
  const carried = carriedOver(nameRules({ egress: { allow: ['pypi.org:8443', 'pypi.org:443', 'other.org'] } }), answered, now);
  assert.deepEqual(carried.map((e) => [e.address, e.port]), [['151.101.0.223', 8443], ['151.101.0.223', 443]]);
  assert.ok(carried.every((e) => e.seconds > 290 && e.seconds <= 300), JSON.stringify(carried));
  assert.deepEqual(carriedOver(nameRules({ egress: { allow: ['other.org'] } }), answered, now), []);
  assert.deepEqual(carriedOver(nameRules({ egress: { allow: ['*.example.com'] } }), answered, now + 3_600_001), [], 'lapsed');
  assert.ok(!dns.asked().some((n) => refused.includes(n)), 'a refused name never leaves');
  assert.equal(await resolver.answer(query('pypi.org', { flags: 0x8100 }), 'udp'), undefined, 'an answer sent as a query is dropped');

  failOpen = true;
  dns.set('new.example.com', ['198.51.100.10']);
  assert.equal(rcode(await resolver.answer(query('new.example.com'), 'udp')), RCODE_SERVFAIL, 'opened nowhere: not answered');

  const silent = createSocket('udp4');
  await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
  try {
    const mute = new EgressResolver({ installed: async () => ({ policy, tag: 7 }), upstreams: [{ address: '127.0.0.1', port: silent.address().port }], open: async () => undefined, refused: () => undefined });
    assert.equal(rcode(await mute.answer(query('pypi.org'), 'udp')), RCODE_SERVFAIL);
  } finally {
    silent.close();
  }
});

test('domain rules as written: names, wildcards, ports; what is neither a name nor an address says why', () => {
  assert.deepEqual(parseEgressRule('PyPI.org'), { name: 'pypi.org', wildcard: false });
  assert.deepEqual(parseEgressRule('*.githubusercontent.com:443'), { name: 'githubusercontent.com', wildcard: true, port: 443 });
  assert.deepEqual(parseEgressRule('198.51.100.7:80'), { family: 4, cidr: '198.51.100.7/32', port: 80 });
  for (const text of ['localhost', '*.com', '*', 'a.*.example.com', 'exa_mple..com', '-x.example.com', 'example.123', 'example.com:99999', '2001:db8::1']) {
    assert.equal(typeof parseEgressRule(text), 'string', text);
  }
  assert.match(parseEgressRule('2001:db8::1') as string, /brackets/);
  assert.throws(() => parseUpstreams('resolver.example'), /not a resolver address/);
  assert.deepEqual(parseUpstreams('198.51.100.2, [2001:db8::1]:5353'), [{ address: '198.51.100.2', port: 53 }, { address: '2001:db8::1', port: 5353 }]);
});
