import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { newId } from '../../shared/ids.ts';
import { GATEWAY_POD_LABELS, GATEWAY_PORTS, POLICY_ANNOTATION, TRUST_BUNDLE_KEY, TRUST_CA_KEY, TRUST_CONFIG_MAP, credentialsSecretName } from '../../shared/runtime/kubernetes/egress-gateway.ts';
import { makeTestCertificates } from '../../scripts/test-tls.ts';
import { GATEWAY_NAMESPACE, startGatewayFixture, type GatewayFixture } from '../k8s-standin/gateway.ts';
import { makeTestHost, type TestHost } from '../helpers/test-host.ts';
import { startTestDns } from '../helpers/test-dns.ts';
import { eventually } from '../helpers/eventually.ts';
import { CoreV1Api } from '@kubernetes/client-node';

// Paddock's egress gateway on Kubernetes (shared/runtime/kubernetes/gateway/), the process as
// deployed (workers/egress-gateway.ts), tested in network namespaces of the test's own: a "pod"
// namespace on 203.0.113.x whose DNS and every connection go to the gateway on the host end of its
// link (as a sandbox pod's go to the gateway's Service, its NetworkPolicy admitting nothing else),
// and a test host on 198.51.100.x with its own names (the test's DNS) and certificates (a test
// authority). The Kubernetes runtime makes the sandbox's pod, NetworkPolicy and Secret on the API
// stand-in, which gives the pod the "pod" namespace's address; the gateway reads them from there,
// knowing the pod by that address. Nothing here connects anywhere but loopback and those namespaces.

const skip = process.getuid?.() !== 0 ? 'network namespaces need root' : false;
const OK = 'ok.gw.paddock.example';
const PLAIN = 'plain.gw.paddock.example';
const API = 'api.gw.paddock.example';
const INWARD = 'inward.gw.paddock.example';
const OTHER = 'other.paddock.example';

let gateway: GatewayFixture;
let pod: TestHost;
let host: TestHost;
let testCa: string;
const work = mkdtempSync(join(tmpdir(), 'paddock-gateway-test-'));
const resolvConf = join(work, 'resolv.conf');

/** The namespaces, the test's DNS and authority, and the gateway with its stand-in and runtime, gone when the file's tests are. */
async function world(): Promise<void> {
  after(() => rmSync(work, { recursive: true, force: true }));
  const certificates = makeTestCertificates([OK, API, OTHER]);
  after(() => certificates.remove());
  testCa = certificates.caFile;
  const dns = await startTestDns();
  host = await makeTestHost({ tls: { cert: certificates.cert, key: certificates.key }, firstPort: 80 });
  for (const name of [OK, PLAIN, API, OTHER]) dns.set(name, [host.address]);
  // Inside the floor: a name may resolve there, and the gateway connects nowhere of the kind.
  dns.set(INWARD, ['10.0.2.2']);
  pod = await makeTestHost({ range: '203.0.113' });
  // The pod's DNS is the gateway's, as its dnsConfig says.
  writeFileSync(resolvConf, `nameserver ${pod.hostEnd}\noptions timeout:2 attempts:1\n`);
  gateway = await startGatewayFixture({ podAddress: pod.address, address: pod.hostEnd, resolvers: dns.address, upstreamCa: certificates.caFile });
  after(() => gateway.close());
}

/** A GET of argv[2] from argv[1] on port 80 whose client half-closes after the request: the body's bytes it read, printed. */
const HALF_CLOSED_GET = `
import socket, sys
s = socket.create_connection((sys.argv[1], 80))
s.sendall(("GET %s HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n" % (sys.argv[2], sys.argv[1])).encode())
s.shutdown(socket.SHUT_WR)
got = b''
while True:
    chunk = s.recv(1 << 20)
    if not chunk:
        break
    got += chunk
print(len(got.split(b'\\r\\n\\r\\n', 1)[1]) if b'\\r\\n\\r\\n' in got else -1)
`;

/** A command in the pod's namespace, its DNS the gateway's. */
const inPod = (args: string[]) => pod.run(args, resolvConf);
const curl = (...args: string[]) => inPod(['curl', '-sS', '--max-time', '15', ...args]);

test('the gateway carries a sandbox pod to the names its policy allows, by name, and to nothing else; it adds brokered credentials; a change of policy holds at once, an open download cut', { skip, timeout: 180_000 }, async () => {
  await world();
  const id = newId('sbx');
  await gateway.runtime.create({ id, accountId: newId('acct'), capSeconds: 600, network: { egress: { allow: ['*.gw.paddock.example', `${PLAIN}:80`] } } });

  // The objects as the API server took them: the pod's DNS is the gateway's, it trusts the
  // gateway's authority, and its NetworkPolicy admits the gateway (DNS, 80, 443) and carries the policy.
  const podName = id.replace('_', '-');
  const made = await gateway.fixture.standin.kubeConfig.makeApiClient(CoreV1Api).readNamespacedPod({ name: podName, namespace: GATEWAY_NAMESPACE });
  assert.equal(made.spec?.dnsPolicy, 'None');
  assert.deepEqual(made.spec?.dnsConfig?.nameservers, [pod.hostEnd]);
  assert.ok(made.spec?.volumes?.some((v) => v.configMap?.name === TRUST_CONFIG_MAP), JSON.stringify(made.spec?.volumes));
  const policy = gateway.fixture.standin.networkPolicies.get(GATEWAY_NAMESPACE, `${podName}-egress`);
  assert.deepEqual(JSON.parse(policy.metadata.annotations![POLICY_ANNOTATION]!), { egress: { allow: ['*.gw.paddock.example', `${PLAIN}:80`] } });
  const toGateway = (policy.spec.egress as { to: { podSelector?: { matchLabels: Record<string, string> } }[]; ports: { port: number }[] }[]).find((rule) => rule.to.some((peer) => peer.podSelector));
  assert.deepEqual(toGateway?.to[0]?.podSelector?.matchLabels, GATEWAY_POD_LABELS);
  assert.deepEqual([...new Set(toGateway!.ports.map((p) => p.port))].sort(), [GATEWAY_PORTS.dns, GATEWAY_PORTS.http, GATEWAY_PORTS.https].sort());
  // What sandboxes trust is published by the gateway: the egress authority's certificate, and a bundle that ends with it.
  const trust = await eventually('the trust published', 20_000, async () => gateway.fixture.standin.configMaps.list(GATEWAY_NAMESPACE).find((c) => c.metadata.name === TRUST_CONFIG_MAP));
  assert.equal(trust.data?.[TRUST_CA_KEY], readFileSync(gateway.egressCa, 'utf8'));
  assert.ok(trust.data?.[TRUST_BUNDLE_KEY]?.endsWith(trust.data[TRUST_CA_KEY]!));

  // TLS to an allowed name passes through untouched: the pod checks the test host's own certificate.
  const tls = await curl('--cacert', testCa, `https://${OK}/tls`);
  assert.equal(tls.code, 0, tls.stderr);
  assert.equal(tls.stdout, 'hello over tls\n');
  // A download the pod reads slower than the host sends, the host closing once it has sent it
  // all: what the gateway holds for the pod when the host closes still reaches it, whole.
  const slow = await curl('--cacert', testCa, '--limit-rate', '16M', '-H', 'Connection: close', '-o', '/dev/null', '-w', '%{size_download}', `https://${OK}/bulk/32`);
  assert.equal(slow.code, 0, slow.stderr);
  assert.equal(slow.stdout, String(32 * 1024 * 1024));
  // Plain HTTP on the rule's port, by its Host.
  const plain = await curl(`http://${PLAIN}/`);
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(plain.stdout, 'hello from the test host\n');

  // A client that half-closes once its request is sent (as `nc -N` does) still reads the whole answer.
  const halfClosed = await inPod(['python3', '-c', HALF_CLOSED_GET, PLAIN, '/bulk/8']);
  assert.equal(halfClosed.code, 0, halfClosed.stderr);
  assert.equal(Number(halfClosed.stdout), 8 * 1024 * 1024);

  // A name outside the policy has no answer, at once; sent to the gateway anyway (its address
  // forced), it is closed at once and never reaches the host, whatever the address it resolves to.
  const unnamed = await curl('--cacert', testCa, `https://${OTHER}/refused-dns`);
  assert.equal(unnamed.code, 6, `no address for ${OTHER}: ${unnamed.stderr}`);
  assert.ok(unnamed.ms < 5000, `refused in ${unnamed.ms} ms`);
  const forced = await curl('--cacert', testCa, '--resolve', `${OTHER}:443:${pod.hostEnd}`, `https://${OTHER}/refused-forced`);
  assert.notEqual(forced.code, 0);
  assert.ok(forced.ms < 5000, `refused in ${forced.ms} ms`);
  // An allowed name on a port its rule does not name, by Host: 403 from the gateway.
  const otherPort = await curl('-o', '/dev/null', '-w', '%{http_code}', '--resolve', `${OTHER}:80:${pod.hostEnd}`, `http://${OTHER}/`);
  assert.equal(otherPort.stdout, '403');
  // An allowed name that resolves inside the floor reaches nothing.
  const inward = await curl('--cacert', testCa, `https://${INWARD}/`);
  assert.notEqual(inward.code, 0);
  // A connection from an address that is no sandbox's gets nothing.
  const stranger = await new Promise<string>((resolve) => {
    const socket = connect({ host: pod.hostEnd, port: 80, localAddress: pod.hostEnd }, () => socket.write(`GET / HTTP/1.1\r\nhost: ${OK}\r\n\r\n`));
    let got = '';
    socket.on('data', (chunk: Buffer) => (got += String(chunk)));
    socket.on('close', () => resolve(got));
    socket.on('error', () => undefined);
  });
  assert.equal(stranger, '');
  assert.deepEqual((await host.requests()).map((r) => r.url).filter((url) => url.startsWith('/refused')), []);
  // Each refusal is counted on the sandbox's NetworkPolicy, where the workers' sweep reads them:
  // the name its DNS refused, the connection forced, the port refused, the name that resolves inward.
  const counted = await eventually('the refusals written', 20_000, async () => {
    const refused = (await gateway.runtime.sweepEgress!()).refused.get(id) ?? 0;
    return refused >= 4 ? refused : undefined;
  });
  assert.ok(counted <= 8, `counted ${counted}`);

  // A brokered credential: added on the pod's HTTPS to its host, the program's own header
  // replaced; a name of the same address gets nothing; the pod trusts the egress authority.
  const value = `tok-${randomBytes(12).toString('hex')}`;
  await gateway.runtime.broker!(id, [{ hosts: [API], header: 'Authorization', value: `Bearer ${value}` }]);
  assert.ok(gateway.fixture.standin.secrets.get(GATEWAY_NAMESPACE, credentialsSecretName(podName)));
  // Heard by the gateway's watch of the Secret: until then the host's own certificate answers, which the egress authority did not sign.
  const brokered = await eventually('the credential heard', 20_000, async () => {
    const got = await curl('--cacert', gateway.egressCa, '-H', 'Authorization: Bearer forged', `https://${API}/brokered`);
    return got.code === 0 ? got : undefined;
  });
  assert.equal(brokered.stdout, 'hello over tls\n');
  const passed = await curl('--cacert', testCa, '-H', 'Authorization: Bearer own', `https://${OK}/not-brokered`);
  assert.equal(passed.code, 0, passed.stderr);
  const requests = await host.requests();
  const authorization = (url: string) => {
    const request = requests.find((r) => r.url === url);
    assert.ok(request, `the test host took ${url}`);
    return request.headers.filter((_, i) => i % 2 === 1 && request.headers[i - 1]!.toLowerCase() === 'authorization');
  };
  assert.deepEqual(authorization('/brokered'), [`Bearer ${value}`]);
  assert.deepEqual(authorization('/not-brokered'), ['Bearer own']);
  assert.ok(!requests.some((r) => r.url !== '/brokered' && r.headers.some((h) => h.includes(value))));

  // A download under way, then the policy closed: the download is cut, and the name no longer answers.
  const download = inPod(['curl', '-sS', '--max-time', '60', '-o', '/dev/null', `http://${PLAIN}/stream`]);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  await gateway.runtime.setNetwork(id, { egress: 'none' });
  const cut = await download;
  assert.notEqual(cut.code, 0);
  assert.ok(cut.ms < 15_000, `cut after ${cut.ms} ms`);
  // Heard by the gateway's watch: the name no longer answers.
  await eventually('the policy heard', 20_000, async () => ((await curl('--cacert', testCa, `https://${OK}/closed`)).code === 6 ? true : undefined));
  // The count went on through the change of policy, which kept what was counted before it.
  await eventually('the count kept and grown', 20_000, async () => (((await gateway.runtime.sweepEgress!()).refused.get(id) ?? 0) > counted ? true : undefined));
  // `none` keeps the gateway's DNS alone, so that every name is refused at once.
  const none = gateway.fixture.standin.networkPolicies.get(GATEWAY_NAMESPACE, `${podName}-egress`);
  assert.deepEqual(
    (none.spec.egress as { ports: { port: number }[] }[]).flatMap((rule) => rule.ports.map((p) => p.port)),
    [GATEWAY_PORTS.dns, GATEWAY_PORTS.dns],
  );

  await gateway.runtime.destroy(id);
  assert.throws(() => gateway.fixture.standin.secrets.get(GATEWAY_NAMESPACE, credentialsSecretName(podName)));
});
