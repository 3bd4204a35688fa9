import assert from 'node:assert/strict';
import { readFileSync, realpathSync } from 'node:fs';
import { after, test } from 'node:test';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { eventually } from '../helpers/eventually.ts';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { hostListener, makeTestHost } from '../helpers/test-host.ts';
import { startTestDns } from '../helpers/test-dns.ts';
import { hostProcesses } from '../helpers/processes.ts';
import { PYTHON_DNS } from '../../scripts/test-dns.ts';
import { makeTestCertificates } from '../../scripts/test-tls.ts';
import { BLOCKED_V4 } from '../../shared/network/floor.ts';
import { sweepOnce } from '../../workers/reaper.ts';
import type { WorkerDeps } from '../../workers/context.ts';

/** A sweep of the reaper's run here, waiting out the lock should another hold it a moment. */
const sweptOnce = (deps: WorkerDeps) => eventually('a sweep of our own', 15_000, () => sweepOnce(deps));

// A sandbox's egress policy (docs/api.md, "Egress policy"), through the HTTP API: set at its
// create and changed while it runs. On the local runtime the policy is tried against test hosts
// of the test's own (test/helpers/test-host.ts: network namespaces on documentation ranges, the
// only addresses any traffic goes to) and against listeners on this host, which no policy opens.
// On Kubernetes the cluster's network plugin enforces it: there the NetworkPolicy objects are read
// as the API stand-in received them. Run once per runtime (PADDOCK_TEST_RUNTIME).

const runtime = testRuntime();
const needsRoot = runtime === 'local' && process.getuid?.() !== 0 ? 'the local runtime gives sandboxes network as root only' : false;
// The names of domain rules resolve through a DNS server of the test's own on this host's loopback.
const dns = await startTestDns();
// The workers run no sweep of their own (their first, a second after they start, could land
// between a test's refusals and record a count it did not mean): the test sweeps when it means to.
const stack = await startSandboxStack({ reaper: false, overrides: { PADDOCK_EGRESS_RESOLVERS: dns.address } });

const create = (key: string, body: unknown) => call(stack.url, 'POST', '/v1/sandboxes', { token: key, body });
const setNetwork = (key: string, id: string, body: unknown) => call(stack.url, 'PATCH', `/v1/sandboxes/${id}/network`, { token: key, body });

/** An account whose key has network:write besides what a sandbox's user needs; and one without it. */
async function keys(label: string) {
  const account = await newAccount(stack.url, label);
  const mint = async (scopes: string[]) => {
    const res = await call(stack.url, 'POST', '/v1/api-keys', { token: account.token, body: { name: scopes.join(' '), scopes } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.key as string;
  };
  const basic = ['sandboxes:read', 'sandboxes:write', 'exec'];
  return { account, opener: await mint([...basic, 'network:write']), agent: await mint(basic) };
}

test('the policy is checked before anything is made: a rule that is not one, a domain where the runtime takes none, a key without network:write; the default needs no scope, and another account\'s sandbox is 404', async () => {
  const { opener, agent } = await keys('network-refusals');
  for (const rule of ['localhost', '*.com', '*', 'exa mple.org', '-bad.example', 'a..example', 'pypi.org:0', 'pypi.*.org', '198.51.100.7/24', '198.51.100.0/33', '2001:db8::1', '[2001:db8::1', '198.51.100.1:0', '198.51.100.1:70000']) {
    const res = await create(opener, { network: { egress: { allow: [rule] } } });
    assertProblem(res, 400, 'invalid_request');
    assert.ok(res.body.detail.includes(JSON.stringify(rule)), res.body.detail);
  }
  assertProblem(await create(opener, { network: { egress: { allow: [] } } }), 400, 'invalid_request');
  if (runtime === 'kubernetes') {
    const named = await create(opener, { network: { egress: { allow: ['pypi.org'] } } });
    assertProblem(named, 403, 'egress_not_permitted');
    assert.match(named.body.detail, /not by domain/);
  }
  assertProblem(await create(opener, { network: { egress: 'some' } }), 400, 'invalid_request');
  const scopeless = await create(agent, { network: { egress: 'all' } });
  assertProblem(scopeless, 403, 'insufficient_scope');
  assert.equal(scopeless.body.scope, 'network:write');

  const plain = await create(agent, { network: { egress: 'none' } });
  assert.equal(plain.status, 201, JSON.stringify(plain.body));
  assert.deepEqual(plain.body.network, { egress: 'none' });
  const read = await call(stack.url, 'GET', `/v1/sandboxes/${plain.body.id}`, { token: agent });
  assert.deepEqual(read.body.network, { egress: 'none' });
  assertProblem(await setNetwork(agent, plain.body.id, { egress: 'all' }), 403, 'insufficient_scope');
  // Closing it again is the default: no scope needed.
  assert.equal((await setNetwork(agent, plain.body.id, { egress: 'none' })).status, 200);

  const other = await keys('network-other');
  assertProblem(await setNetwork(other.opener, plain.body.id, { egress: 'all' }), 404, 'sandbox_not_found');
  assertProblem(await setNetwork(other.opener, 'sbx_000000000000000000000000', { egress: 'all' }), 404, 'sandbox_not_found');
  const pending = await call(stack.url, 'POST', '/v1/sandboxes?wait=false', { token: opener, body: {} });
  const early = await setNetwork(opener, pending.body.id, { egress: 'all' });
  if (early.status !== 200) assertProblem(early, 409, 'sandbox_not_running');
  await call(stack.url, 'DELETE', `/v1/sandboxes/${plain.body.id}`, { token: agent });
  assertProblem(await setNetwork(agent, plain.body.id, { egress: 'none' }), 409, 'sandbox_not_running');
});

test('local: allow opens the listed address and port alone, fast refusals elsewhere, no DNS; a change applies to the running sandbox and cuts a download it no longer allows; the floor holds whatever a rule says', { skip: runtime !== 'local' ? 'the local runtime' : needsRoot }, async () => {
  const [a, b] = [await makeTestHost({ servers: 2 }), await makeTestHost({ range: '203.0.113' })];
  const loopback = await hostListener('127.0.0.1');
  const hostEnd = await hostListener(a.hostEnd);
  const { opener } = await keys('network-local');
  const created = await create(opener, { network: { egress: { allow: [`${a.address}:${a.ports[0]}`, '127.0.0.0/8', `${a.hostEnd}/32`] } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.status, 'running', JSON.stringify(created.body));
  const id = created.body.id as string;
  const sh = async (command: string) => {
    const res = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: opener, body: { command: ['bash', '-c', command], timeoutSeconds: 15 } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { exitCode: number | null; stdout: string; stderr: string };
  };
  const get = (host: string, port: number) => sh(`exec 3<>/dev/tcp/${host}/${port} && printf 'GET / HTTP/1.0\\r\\nHost: t\\r\\n\\r\\n' >&3 && cat <&3`);
  /** Refused, and at once: a reset or an ICMP error, never a connect left to time out. */
  const refused = async (host: string, port: number) => {
    const started = Date.now();
    const res = await get(host, port);
    assert.notEqual(res.exitCode, 0, `reached ${host}:${port}: ${res.stdout}`);
    assert.doesNotMatch(res.stdout, /hello/);
    assert.ok(Date.now() - started < 5000, `${host}:${port} took ${Date.now() - started} ms to fail`);
  };

  assert.match((await get(a.address, a.ports[0]!)).stdout, /hello from the test host/);
  await refused(a.address, a.ports[1]!);
  await refused(b.address, b.port);
  // The floor: loopback and this host's own address, though the rules name them.
  await refused('127.0.0.1', loopback.port);
  await refused(a.hostEnd, hostEnd.port);
  // No DNS under allow: slirp's forwarder would ask the host's resolvers anything.
  const dns = await sh(`exec 3<>/dev/tcp/10.0.2.3/53 && echo connected`);
  assert.notEqual(dns.exitCode, 0, dns.stdout);

  // The refusals are counted, and the workers' sweep records them with one network.refused a minute.
  const refusedEvents = async () =>
    ((await call(stack.url, 'GET', '/v1/events?limit=100', { token: opener })).body.data as { type: string; data: { sandbox: { id: string; networkRefused: number } } }[]).filter(
      (e) => e.type === 'network.refused' && e.data.sandbox.id === id,
    );
  await sweptOnce(stack.workers[0]!.deps);
  const [first, ...more] = await refusedEvents();
  assert.ok(first, 'a network.refused event');
  assert.deepEqual(more, []);
  assert.ok(first.data.sandbox.networkRefused >= 5, `counted ${first.data.sandbox.networkRefused}`);
  assert.equal((await call(stack.url, 'GET', `/v1/sandboxes/${id}`, { token: opener })).body.networkRefused, first.data.sandbox.networkRefused);
  await refused(b.address, b.port);
  await sweptOnce(stack.workers[0]!.deps);
  assert.equal((await refusedEvents()).length, 1, 'a second within the minute waits');

  // A download under way, then a policy that no longer allows it: the download is cut.
  const download = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, {
    token: opener,
    body: { command: ['bash', '-c', `exec 3<>/dev/tcp/${a.address}/${a.ports[0]} && printf 'GET /stream HTTP/1.0\\r\\nHost: t\\r\\n\\r\\n' >&3 && cat <&3 > /tmp/stream; echo "ended $?" > /tmp/stream.end`], background: true },
  });
  assert.equal(download.status, 202, JSON.stringify(download.body));
  const size = async () => Number((await sh('stat -c %s /tmp/stream 2>/dev/null || echo 0')).stdout.trim());
  await eventually('the download runs', 10_000, async () => ((await size()) > 4096 ? true : undefined));

  const all = await setNetwork(opener, id, { egress: 'all' });
  assert.equal(all.status, 200, JSON.stringify(all.body));
  assert.deepEqual(all.body.network, { egress: 'all' });
  assert.match((await get(b.address, b.port)).stdout, /hello from the test host/, 'all reaches the other host');
  await refused('127.0.0.1', loopback.port);
  assert.ok((await size()) > 4096, 'the download allowed before is allowed still');

  const none = await setNetwork(opener, id, { egress: 'none' });
  assert.deepEqual(none.body.network, { egress: 'none' });
  await eventually('the download is cut', 10_000, async () => ((await sh('cat /tmp/stream.end 2>/dev/null')).stdout.startsWith('ended') ? true : undefined));
  const after = await size();
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(await size(), after, 'nothing arrives once it is cut');
  await refused(a.address, a.ports[0]!);
  assert.deepEqual((await call(stack.url, 'GET', `/v1/sandboxes/${id}`, { token: opener })).body.network, { egress: 'none' });

  // From none to allow on a sandbox created without network: it is given its network then.
  const closed = await create(opener, {});
  assert.deepEqual(closed.body.network, { egress: 'none' });
  const opened = await setNetwork(opener, closed.body.id, { egress: { allow: [`${b.address}/32`] } });
  assert.equal(opened.status, 200, JSON.stringify(opened.body));
  const reached = await call(stack.url, 'POST', `/v1/sandboxes/${closed.body.id}/exec`, {
    token: opener,
    body: { command: ['bash', '-c', `exec 3<>/dev/tcp/${b.address}/${b.port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`], timeoutSeconds: 15 },
  });
  assert.match(reached.body.stdout, /hello from the test host/);

  assert.equal(loopback.connections(), 0, 'the loopback listener saw a connection');
  assert.equal(hostEnd.connections(), 0, 'the host-end listener saw a connection');
  // The sandbox cannot widen its own policy: it has no capability over its namespace.
  const lift = await sh('nft flush ruleset 2>&1; ip route 2>&1; echo done');
  assert.match(lift.stdout, /Operation not permitted|must be root|not found/);
});

test('local: domain rules answer the names they allow and open their addresses alone, on their ports; any other name has no address; a name that resolves into the floor reaches nothing; a change keeps what it still allows and forgets the rest, cutting what that opened', { skip: runtime !== 'local' ? 'the local runtime' : needsRoot }, async () => {
  const [a, b] = [await makeTestHost({ servers: 2 }), await makeTestHost({ range: '203.0.113' })];
  const hostEnd = await hostListener(a.hostEnd);
  dns.set('web.paddock.example', [a.address]);
  dns.set('one.wild.paddock.example', [b.address]);
  dns.set('deep.two.wild.paddock.example', [b.address]);
  dns.set('wild.paddock.example', [b.address]);
  dns.set('other.paddock.example', [b.address]);
  dns.set('inside.wild.paddock.example', [a.hostEnd, '10.0.2.2']);
  const { opener } = await keys('network-names');
  const created = await create(opener, { network: { egress: { allow: [`web.paddock.example:${a.ports[0]}`, '*.wild.paddock.example'] } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const sh = async (command: string) => {
    const res = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: opener, body: { command: ['bash', '-c', command], timeoutSeconds: 20 } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { exitCode: number | null; stdout: string; stderr: string };
  };
  /** curl, by name: its exit code (6: no address; 7: refused) and what it got. */
  const curl = async (url: string) => {
    const started = Date.now();
    const res = await sh(`curl -sS --max-time 10 ${url}; echo " exit=$?"`);
    return { out: res.stdout, code: Number(/exit=([0-9]+)/.exec(res.stdout)?.[1]), ms: Date.now() - started };
  };

  const web = await curl(`http://web.paddock.example:${a.ports[0]}/`);
  assert.match(web.out, /hello from the test host/, 'the allowed name on its port');
  const otherPort = await curl(`http://web.paddock.example:${a.ports[1]}/`);
  assert.equal(otherPort.code, 7, `another port of the same name is refused: ${otherPort.out}`);
  assert.ok(otherPort.ms < 5000, `refused at once, not after ${otherPort.ms} ms`);
  assert.match((await curl(`http://one.wild.paddock.example:${b.port}/`)).out, /hello from the test host/, 'a subdomain of the wildcard, any port');
  assert.match((await curl(`http://deep.two.wild.paddock.example:${b.port}/`)).out, /hello from the test host/, 'a deeper one');
  for (const name of ['other.paddock.example', 'wild.paddock.example', 'paddock.example']) {
    const res = await curl(`http://${name}:${b.port}/`);
    assert.equal(res.code, 6, `${name} has no address: ${res.out}`);
  }
  const names = dns.asked();
  assert.ok(!names.includes('other.paddock.example') && !names.includes('wild.paddock.example'), `names the policy refuses are never asked upstream: ${names.join(', ')}`);
  // Over TCP as well (a large answer's path): dig is not on every host, so Python asks.
  const tcp = (
    await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, {
      token: opener,
      body: {
        command: ['python3', '-c', `${PYTHON_DNS}
import socket
q = query(7, 'web.paddock.example')
s = socket.create_connection(('10.0.2.3', 53), timeout=10)
s.sendall(struct.pack('>H', len(q)) + q)
n = struct.unpack('>H', s.recv(2))[0]
a = b''
while len(a) < n: a += s.recv(n - len(a))
print('answers', struct.unpack('>H', a[6:8])[0], '.'.join(str(b) for b in a[-4:]))
`],
        timeoutSeconds: 20,
      },
    })
  ).body as { stdout: string; stderr: string };
  assert.match(tcp.stdout, new RegExp(`answers 1 ${a.address.replace(/\./g, '\\.')}`), tcp.stdout + tcp.stderr);

  // A name that resolves into the floor (this host's own address, slirp's gateway) reaches nothing there.
  const inside = await curl(`http://inside.wild.paddock.example:${hostEnd.port}/`);
  assert.notEqual(inside.code, 0, inside.out);
  assert.ok(inside.ms < 5000, `refused at once, not after ${inside.ms} ms`);
  assert.equal(hostEnd.connections(), 0, 'the host-end listener saw a connection');

  // The refused names are counted with the sandbox's other refusals.
  await sweptOnce(stack.workers[0]!.deps);
  const counted = (await call(stack.url, 'GET', `/v1/sandboxes/${id}`, { token: opener })).body.networkRefused as number;
  assert.ok(counted >= 4, `counted ${counted}`);

  // A download under way from a resolved address, then a change that no longer names it: cut.
  const download = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, {
    token: opener,
    body: { command: ['bash', '-c', `curl -sS -o /tmp/stream http://web.paddock.example:${a.ports[0]}/stream; echo "ended $?" > /tmp/stream.end`], background: true },
  });
  assert.equal(download.status, 202, JSON.stringify(download.body));
  const size = async () => Number((await sh('stat -c %s /tmp/stream 2>/dev/null || echo 0')).stdout.trim());
  await eventually('the download runs', 10_000, async () => ((await size()) > 4096 ? true : undefined));
  // A change that still allows the name: the download goes on, and the name still resolves.
  const widened = await setNetwork(opener, id, { egress: { allow: [`web.paddock.example:${a.ports[0]}`, 'other.paddock.example'] } });
  assert.equal(widened.status, 200, JSON.stringify(widened.body));
  const going = await size();
  await eventually('the download goes on', 10_000, async () => ((await size()) > going + 8192 ? true : undefined));
  assert.equal((await sh('cat /tmp/stream.end 2>/dev/null')).stdout, '', 'not cut');
  assert.match((await curl(`http://web.paddock.example:${a.ports[0]}/`)).out, /hello from the test host/);
  const changed = await setNetwork(opener, id, { egress: { allow: ['other.paddock.example'] } });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  await eventually('the download is cut', 10_000, async () => ((await sh('cat /tmp/stream.end 2>/dev/null')).stdout.startsWith('ended') ? true : undefined));
  assert.equal((await curl(`http://web.paddock.example:${a.ports[0]}/`)).code, 6, 'the name it no longer allows has no address');
  const byAddress = await sh(`exec 3<>/dev/tcp/${a.address}/${a.ports[0]} && echo connected`);
  assert.notEqual(byAddress.exitCode, 0, 'its address, resolved under the old policy, is closed');
  assert.match((await curl(`http://other.paddock.example:${b.port}/`)).out, /hello from the test host/, 'the new name');

  // Back to addresses alone: DNS is closed again, and the resolver is gone.
  assert.equal((await setNetwork(opener, id, { egress: { allow: [`${b.address}/32`] } })).status, 200);
  assert.equal((await curl(`http://other.paddock.example:${b.port}/`)).code, 6);
  assert.match((await sh(`exec 3<>/dev/tcp/${b.address}/${b.port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`)).stdout, /hello from the test host/);
});

test('local: HTTP and HTTPS to a name reach where the name they claim resolves: another name at the same open address, by its TLS server name or its Host, is refused; the allowed name passes, its TLS untouched', { skip: runtime !== 'local' ? 'the local runtime' : needsRoot }, async () => {
  const [allowed, other] = ['ok.sni.paddock.example', 'other.sni.paddock.example'];
  const certificates = makeTestCertificates([allowed, other]);
  after(() => certificates.remove());
  const host = await makeTestHost({ tls: { cert: certificates.cert, key: certificates.key }, firstPort: 80 });
  // Both names at one address, as on a shared front: the allowed one's answer opens it.
  dns.set(allowed, [host.address]);
  dns.set(other, [host.address]);
  const { opener } = await keys('network-sni');
  const created = await create(opener, { network: { egress: { allow: [allowed] } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const sh = async (command: string, stdin?: string) => {
    const res = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: opener, body: { command: ['bash', '-c', command], timeoutSeconds: 20, ...(stdin === undefined ? {} : { stdin }) } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { exitCode: number | null; stdout: string; stderr: string };
  };
  await sh('cat > /tmp/ca.pem', readFileSync(certificates.caFile, 'utf8'));

  // The sandbox checks the host's own certificate: the pass-through does not end its TLS.
  const tls = await sh(`curl -sS --max-time 10 --cacert /tmp/ca.pem https://${allowed}/sni-allowed`);
  assert.equal(tls.stdout, 'hello over tls\n', tls.stderr);
  const http = await sh(`curl -sS --max-time 10 http://${allowed}/`);
  assert.equal(http.stdout, 'hello from the test host\n', http.stderr);
  // The address is open; the other name is not, whether it rides the TLS server name or the Host.
  const started = Date.now();
  const sni = await sh(`curl -sS --max-time 10 --cacert /tmp/ca.pem --resolve ${other}:443:${host.address} https://${other}/sni-other`);
  assert.notEqual(sni.exitCode, 0, sni.stdout);
  assert.ok(Date.now() - started < 5000, `refused after ${Date.now() - started} ms`);
  const forged = await sh(`curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -H 'Host: ${other}' http://${allowed}/host-other`);
  assert.equal(forged.stdout, '403', forged.stderr);
  const urls = (await host.requests()).map((r) => r.url);
  assert.ok(urls.includes('/sni-allowed'), JSON.stringify(urls));
  assert.ok(!urls.includes('/sni-other'), JSON.stringify(urls));
  // Refusals of the pass-through are counted as the filter's are (its count written within a second).
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await sweptOnce(stack.workers[0]!.deps);
  const read = await call(stack.url, 'GET', `/v1/sandboxes/${id}`, { token: opener });
  assert.ok(read.body.networkRefused >= 2, `counted ${read.body.networkRefused}`);
});

test('local: one resolver serves every sandbox whose policy names domains, outside their memory, each within a budget of queries; killed, the workers\' sweep starts it again', { skip: runtime !== 'local' ? 'the local runtime' : needsRoot }, async () => {
  const target = await makeTestHost({ range: '203.0.113' });
  dns.set('both.paddock.example', [target.address]);
  const { opener } = await keys('network-resolver');
  const ids: string[] = [];
  for (let i = 0; i < 2; i++) {
    const made = await create(opener, { network: { egress: { allow: ['both.paddock.example'] } } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    ids.push(made.body.id as string);
  }
  const fetchIn = async (id: string) => {
    const res = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: opener, body: { command: ['bash', '-c', `curl -sS --max-time 10 http://both.paddock.example:${target.port}/; echo " exit=$?"`], timeoutSeconds: 20 } });
    return String(res.body.stdout);
  };
  for (const id of ids) assert.match(await fetchIn(id), /hello from the test host/);
  /** The resolver processes of this stack's data directory. */
  const dataDir = realpathSync(stack.config.PADDOCK_DATA_DIR);
  const resolvers = () =>
    hostProcesses()
      .filter(({ args }) => args.some((arg) => arg.endsWith('egress-resolver-main.ts')) && args.some((arg) => arg.includes(dataDir)))
      .map(({ pid }) => pid);
  // A flood of queries from one sandbox is answered within its budget (200 at once, then 100 a
  // second), and the other sandbox's names still resolve meanwhile.
  const flood = await call(stack.url, 'POST', `/v1/sandboxes/${ids[0]}/exec`, {
    token: opener,
    body: {
      command: ['python3', '-c', `${PYTHON_DNS}
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
answered = 0
# 1,500 queries over 3 s: paced, so that no socket's buffer drops what the budget would.
start = time.monotonic()
for i in range(1500):
    s.sendto(query(i), ('10.0.2.3', 53))
    answered += drain(s)
    time.sleep(max(0, start + (i + 1) * 0.002 - time.monotonic()))
end = time.monotonic() + 1
while time.monotonic() < end:
    answered += drain(s)
    time.sleep(0.01)
print(answered)
`],
      timeoutSeconds: 30,
    },
  });
  const answered = Number(String(flood.body.stdout).trim());
  // 200, then 100 a second over some 3 s: about 500 of 1,500.
  assert.ok(answered >= 200 && answered <= 900, `answered ${answered} of 1,500 queries`);
  assert.match(await fetchIn(ids[1]!), /hello from the test host/, 'the other sandbox resolves meanwhile');

  const [resolver, ...others] = resolvers();
  assert.ok(resolver, 'a resolver runs');
  assert.deepEqual(others, [], 'one for both sandboxes');
  process.kill(resolver, 'SIGKILL');
  await eventually('the resolver is gone', 5000, async () => (resolvers().length === 0 ? true : undefined));
  assert.match(await fetchIn(ids[0]!), /exit=6/, 'without it, no name resolves');
  await sweptOnce(stack.workers[0]!.deps);
  for (const id of ids) assert.match(await fetchIn(id), /hello from the test host/, 'served again after the sweep');
  assert.equal(resolvers().length, 1);
});

test('kubernetes: a sandbox pod gets a NetworkPolicy of its own that opens what its policy says and never the floor, replaced by a change, gone with none and with the pod', { skip: runtime !== 'kubernetes' && 'the kubernetes runtime' }, async () => {
  const policies = stack.standin!.networkPolicies;
  const namespace = stack.config.PADDOCK_KUBE_NAMESPACE;
  const { opener } = await keys('network-kube');
  const created = await create(opener, { network: { egress: { allow: ['198.51.100.0/24:443', '10.1.2.3', '[2001:db8::/32]', '0.0.0.0/1'] } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const name = `${id.replace('_', '-')}-egress`;
  const mine = () => policies.list(namespace).filter((p) => p.metadata.name === name);
  const [policy] = mine();
  assert.ok(policy, 'the pod has its NetworkPolicy');
  assert.deepEqual(policy.spec.podSelector, { matchLabels: { 'paddock.dev/sandbox-id': id } });
  assert.deepEqual(policy.spec.policyTypes, ['Egress']);
  assert.equal(policy.metadata.ownerReferences?.[0]?.kind, 'Pod');
  const tcpUdp = (port: number) => [{ protocol: 'TCP', port }, { protocol: 'UDP', port }];
  assert.deepEqual(policy.spec.egress, [
    { to: [{ ipBlock: { cidr: '198.51.100.0/24' } }], ports: tcpUdp(443) },
    // 10.1.2.3 is inside the floor: it opens nothing.
    { to: [{ ipBlock: { cidr: '2001:db8::/32' } }] },
    // A range that holds floor ranges leaves them out.
    { to: [{ ipBlock: { cidr: '0.0.0.0/1', except: BLOCKED_V4.filter((r) => Number(r.split('.')[0]) < 128) } }] },
  ]);

  const all = await setNetwork(opener, id, { egress: 'all' });
  assert.equal(all.status, 200, JSON.stringify(all.body));
  const [replaced] = mine();
  assert.equal(replaced!.metadata.uid, policy.metadata.uid, 'replaced, not made anew');
  const egress = replaced!.spec.egress as { to: { ipBlock?: { cidr: string; except?: string[] } }[]; ports?: unknown[] }[];
  assert.deepEqual(egress[0]!.to.map((t) => t.ipBlock!.cidr), ['0.0.0.0/0', '::/0']);
  assert.deepEqual(egress[0]!.to[0]!.ipBlock!.except, [...BLOCKED_V4]);
  assert.deepEqual(egress[1]!.ports, tcpUdp(53), "all resolves names through the cluster's DNS");

  assert.equal((await setNetwork(opener, id, { egress: 'none' })).status, 200);
  assert.equal(mine().length, 0, 'none is the namespace denial: no policy of its own');
  assert.equal((await setNetwork(opener, id, { egress: { allow: ['203.0.113.9:80'] } })).status, 200);
  assert.equal(mine().length, 1);
  assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${id}`, { token: opener })).status, 200);
  assert.equal(mine().length, 0, 'gone with the pod');
});
