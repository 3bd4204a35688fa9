import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import type { BrokeredCredential } from '../../shared/network/brokered.ts';

// Brokered secrets (docs/api.md, "Secrets"), the API's side, through HTTP: what `inject` takes,
// that such a secret is in no environment, and what the API hands the runtime's egress (the
// egress itself is the runtime's tests'). On Kubernetes, whose egress is the cluster's, `inject`
// is refused, unless Paddock's egress gateway runs there (PADDOCK_EGRESS_GATEWAY): then the
// credentials go to a Secret of the pod's, which the gateway reads. Run once per runtime
// (PADDOCK_TEST_RUNTIME).

const runtime = testRuntime();
const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });
const brokers = runtime === 'local' ? false : 'the local runtime (the kubernetes one brokers with its gateway alone: the last test)';

// What the API process hands the runtime's egress, recorded on its way there.
const api = stack.apis[0]!.deps.runtime as { broker?: (id: string, credentials: readonly BrokeredCredential[]) => Promise<void> };
const brokered: { id: string; credentials: readonly BrokeredCredential[] }[] = [];
const broker = api.broker;
if (broker) {
  api.broker = (id, credentials) => {
    brokered.push({ id, credentials });
    return broker.call(api, id, credentials);
  };
}
const brokeredTo = (id: string) => brokered.filter((b) => b.id === id).map((b) => b.credentials);

async function setup() {
  const a = await newAccount(stack.url, 'brokered');
  const s = (await createSandbox(stack.url, a.key)).body;
  assert.ok(s.id, JSON.stringify(s));
  const exec = (body: unknown) => call(stack.url, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: a.key, body });
  const secret = (body: unknown) => call(stack.url, 'POST', '/v1/secrets', { token: a.key, body });
  const list = async () => (await call(stack.url, 'GET', '/v1/secrets', { token: a.key })).body.data;
  return { a, s, exec, secret, list };
}

test('inject is checked before anything is stored: a host that is no domain or names a port, a header that frames the request, a format without {value} once, a value that cannot be a header', async () => {
  const { secret, list } = await setup();
  const refused = async (body: Record<string, unknown>, field: string, says: RegExp) => {
    const res = await secret({ name: 'TOKEN', value: 'tok-4b1e9c2d7a', ...body });
    assertProblem(res, 400, 'invalid_request');
    assert.equal(res.body.errors[0].field, field, JSON.stringify(res.body));
    assert.match(res.body.detail, says);
  };
  await refused({ inject: { hosts: ['10.0.0.1'] } }, 'inject.hosts.0', /"10\.0\.0\.1": .*not an address/);
  await refused({ inject: { hosts: ['api.example.com', '[2001:db8::1]'] } }, 'inject.hosts.1', /not an address/);
  await refused({ inject: { hosts: ['localhost'] } }, 'inject.hosts.0', /"localhost": .*two labels/);
  await refused({ inject: { hosts: ['api.example.com:443'] } }, 'inject.hosts.0', /no port/);
  await refused({ inject: { hosts: ['*'] } }, 'inject.hosts.0', /"\*"/);
  await refused({ inject: { hosts: [] } }, 'inject.hosts', /inject\.hosts/);
  await refused({ inject: { hosts: Array.from({ length: 17 }, (_, i) => `h${i}.example.com`) } }, 'inject.hosts', /inject\.hosts/);
  await refused({ inject: { hosts: ['api.example.com'], header: 'Host' } }, 'inject.header', /frames or routes/);
  await refused({ inject: { hosts: ['api.example.com'], header: 'content-length' } }, 'inject.header', /frames or routes/);
  await refused({ inject: { hosts: ['api.example.com'], header: 'X Token' } }, 'inject.header', /header name/);
  await refused({ inject: { hosts: ['api.example.com'], format: 'Bearer token' } }, 'inject.format', /\{value\} exactly once/);
  await refused({ inject: { hosts: ['api.example.com'], format: '{value}:{value}' } }, 'inject.format', /\{value\} exactly once/);
  await refused({ inject: { hosts: ['api.example.com'], format: 'Bearer {value}\r\nX-Other: 1' } }, 'inject.format', /printable ASCII/);
  await refused({ inject: { hosts: ['api.example.com'] }, value: 'tok-4b1e\n9c2d7a' }, 'value', /printable ASCII/);
  await refused({ inject: { hosts: ['api.example.com'] }, value: 'tok-4b1e-é-9c2d7a' }, 'value', /printable ASCII/);
  await refused({ inject: { hosts: ['api.example.com'], extra: 1 } }, 'inject.extra', /./);
  assert.deepEqual(await list(), []);
  // Without inject, the same value is an environment variable's, which may hold a line break.
  assert.equal((await secret({ name: 'TOKEN', value: 'tok-4b1e\n9c2d7a' })).status, 201);
});

test('on kubernetes a secret with inject is refused (403 egress_not_permitted) and nothing is stored', { skip: runtime !== 'kubernetes' && 'the kubernetes runtime' }, async () => {
  const { secret, list } = await setup();
  const res = await secret({ name: 'TOKEN', value: 'tok-4b1e9c2d7a', inject: { hosts: ['api.example.com'] } });
  assertProblem(res, 403, 'egress_not_permitted');
  assert.match(res.body.detail, /cannot broker credentials/);
  assert.deepEqual(await list(), []);
  // An ordinary secret is stored as ever.
  assert.equal((await secret({ name: 'TOKEN', value: 'tok-4b1e9c2d7a' })).status, 201);
});

test('a brokered secret is stored with its injection, normalised and defaulted, shown by create and list, never with its value', { skip: brokers }, async () => {
  const { s, secret, list } = await setup();
  const value = 'brk-71c3e5a9f0d2';
  const created = await secret({ name: 'API_KEY', value, inject: { hosts: ['API.Example.com', 'api.example.com.', '*.Example.org'] } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.deepEqual(created.body.inject, { hosts: ['api.example.com', '*.example.org'], header: 'Authorization', format: 'Bearer {value}' });
  const scoped = await secret({ name: 'OTHER_KEY', value, sandboxId: s.id, inject: { hosts: ['api.example.net'], header: 'X-Api-Key', format: '{value}' } });
  assert.equal(scoped.status, 201, JSON.stringify(scoped.body));
  await secret({ name: 'PLAIN', value: 'plain-0e8d4b2a61' });
  const listed = await list();
  assert.deepEqual(
    listed.map((x: any) => [x.name, x.sandboxId, x.inject]),
    [
      ['API_KEY', null, { hosts: ['api.example.com', '*.example.org'], header: 'Authorization', format: 'Bearer {value}' }],
      ['PLAIN', null, null],
      ['OTHER_KEY', s.id, { hosts: ['api.example.net'], header: 'X-Api-Key', format: '{value}' }],
    ],
  );
  assert.ok(!JSON.stringify([created.body, scoped.body, listed]).includes(value));
  // Replaced by an ordinary one, it is one.
  const replaced = await secret({ name: 'API_KEY', value });
  assert.equal(replaced.status, 200);
  assert.equal(replaced.body.inject, null);
});

test("a brokered secret is in no exec's environment, nor a background process's; an ordinary one is; its value is still masked in output", { skip: brokers }, async () => {
  const { s, exec, secret } = await setup();
  const [brokeredValue, plainValue] = ['brk-5d2f8a1c9e47', 'plain-93a7c1e5b2'];
  assert.equal((await secret({ name: 'BROKERED_TOKEN', value: brokeredValue, inject: { hosts: ['api.example.com'] } })).status, 201);
  assert.equal((await secret({ name: 'OWN_TOKEN', value: 'own-2c6e0b8d4f', sandboxId: s.id, inject: { hosts: ['api.example.com'], header: 'X-Own' } })).status, 201);
  assert.equal((await secret({ name: 'PLAIN_TOKEN', value: plainValue })).status, 201);
  // Counted inside the sandbox: its output is masked, so a value printed would read *** there.
  const counts = `for p in ^BROKERED_TOKEN= ^OWN_TOKEN= ${brokeredValue} own-2c6e0b8d4f ^PLAIN_TOKEN= ${plainValue}; do printf '%s ' "$(env | grep -c -- "$p")"; done`;
  const res = await exec({ command: counts });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.stdout, '0 0 0 0 1 1 ');
  const listed = await exec({ command: 'env' });
  assert.ok(!listed.body.stdout.includes('BROKERED_TOKEN') && !listed.body.stdout.includes('OWN_TOKEN'), listed.body.stdout);
  assert.match(listed.body.stdout, /^PLAIN_TOKEN=\*\*\*$/m);

  const started = await exec({ command: `${counts} > /workspace/counts.tmp; mv /workspace/counts.tmp /workspace/counts.txt`, background: true });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const fromBackground = await exec({ command: 'for i in $(seq 100); do [ -s /workspace/counts.txt ] && break; sleep 0.1; done; cat /workspace/counts.txt' });
  assert.equal(fromBackground.body.stdout, '0 0 0 0 1 1 ');

  // A server may echo the header back: the value is masked as an ordinary secret's is.
  const echoed = await exec({ command: `echo "Authorization: Bearer ${brokeredValue}"` });
  assert.equal(echoed.body.stdout, 'Authorization: Bearer ***\n');
});

test("the sandbox's egress is handed its credentials before each start, and anew when a brokered secret changes: the account's for every active sandbox of it, a sandbox's for its own", { skip: brokers }, async () => {
  const { a, s, exec, secret } = await setup();
  const other = (await createSandbox(stack.url, a.key)).body;
  assert.ok(other.id, JSON.stringify(other));
  const stranger = await setup();
  const ordinary = await secret({ name: 'PLAIN', value: 'plain-5f1e2d3c4b' });
  assert.equal(ordinary.status, 201);
  assert.deepEqual(brokeredTo(s.id), [], 'an ordinary secret is handed to no egress');
  await exec({ command: 'true' });
  assert.deepEqual(brokeredTo(s.id), [], 'nothing is handed over while there is nothing to broker');

  const account = { hosts: ['api.example.com'], header: 'Authorization', value: 'Bearer acct-8b3d1f6a2e' };
  assert.equal((await secret({ name: 'ACCOUNT_KEY', value: 'acct-8b3d1f6a2e', inject: { hosts: ['api.example.com'] } })).status, 201);
  assert.deepEqual(brokeredTo(s.id), [[account]]);
  assert.deepEqual(brokeredTo(other.id), [[account]]);
  assert.deepEqual(brokeredTo(stranger.s.id), []);

  const own = { hosts: ['*.example.net'], header: 'X-Api-Key', value: 'key=own-4a9c2e7b1d' };
  assert.equal((await secret({ name: 'OWN_KEY', value: 'own-4a9c2e7b1d', sandboxId: s.id, inject: { hosts: ['*.example.net'], header: 'X-Api-Key', format: 'key={value}' } })).status, 201);
  assert.deepEqual(brokeredTo(s.id).at(-1), [account, own], "the account's first, then the sandbox's own");
  assert.equal(brokeredTo(other.id).length, 1, "a sandbox's own secret is handed to its egress alone");

  // Before every start: an exec, a background process, a terminal.
  const before = brokeredTo(s.id).length;
  assert.equal((await exec({ command: 'true' })).status, 200);
  assert.equal((await exec({ command: 'true', background: true })).status, 202);
  const terminal = await call(stack.url, 'GET', `/v1/sandboxes/${s.id}/terminal`, { token: a.key, upgrade: 'paddock.terminal.v1' });
  assert.equal(terminal.status, 101, JSON.stringify(terminal.body));
  assert.deepEqual(brokeredTo(s.id).slice(before), [[account, own], [account, own], [account, own]]);

  // Deleted, or replaced by an ordinary secret: the egress no longer holds it.
  assert.equal((await call(stack.url, 'DELETE', `/v1/secrets/OWN_KEY?sandboxId=${s.id}`, { token: a.key })).status, 204);
  assert.deepEqual(brokeredTo(s.id).at(-1), [account]);
  assert.equal((await secret({ name: 'ACCOUNT_KEY', value: 'acct-8b3d1f6a2e' })).status, 200);
  assert.deepEqual(brokeredTo(s.id).at(-1), []);
  assert.deepEqual(brokeredTo(other.id).at(-1), []);
  const handed = brokered.length;
  assert.equal((await call(stack.url, 'DELETE', '/v1/secrets/PLAIN', { token: a.key })).status, 204);
  assert.equal(brokered.length, handed, 'deleting an ordinary secret hands nothing over');
});

test('on kubernetes with the egress gateway: domain rules and brokered secrets are taken, the credential reaches the pod\'s Secret alone, and goes with the pod', { skip: runtime !== 'kubernetes' && 'the kubernetes runtime' }, async () => {
  // A documentation address for the gateway's Service: pods are told of it, nothing connects to it.
  const gated = await startSandboxStack({ overrides: { PADDOCK_EGRESS_GATEWAY: '192.0.2.53' } });
  const standin = gated.standin!;
  const namespace = gated.config.PADDOCK_KUBE_NAMESPACE;
  const account = await newAccount(gated.url, 'brokered-gateway');
  const token = account.key;
  const created = await call(gated.url, 'POST', '/v1/sandboxes', { token, body: { network: { egress: { allow: ['pypi.org', '*.githubusercontent.com:443'] } } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const pod = id.replace('_', '-');
  const policy = standin.networkPolicies.get(namespace, `${pod}-egress`);
  assert.deepEqual(JSON.parse(policy.metadata.annotations!['paddock.dev/egress-policy']!), { egress: { allow: ['pypi.org', '*.githubusercontent.com:443'] } });

  const value = 'brk-5d0c9e7a31f4';
  const secret = await call(gated.url, 'POST', '/v1/secrets', { token, body: { name: 'API_KEY', value, sandboxId: id, inject: { hosts: ['api.example.com'] } } });
  assert.equal(secret.status, 201, JSON.stringify(secret.body));
  const ran = await call(gated.url, 'POST', `/v1/sandboxes/${id}/exec`, { token, body: { command: ['sh', '-c', 'env'], timeoutSeconds: 30 } });
  assert.equal(ran.status, 200, JSON.stringify(ran.body));
  assert.ok(!String(ran.body.stdout).includes(value), 'the value is in the sandbox\'s environment');
  const stored = standin.secrets.get(namespace, `${pod}-egress-credentials`);
  assert.deepEqual(JSON.parse(Buffer.from(stored.data!['credentials.json']!, 'base64').toString()), [{ hosts: ['api.example.com'], header: 'Authorization', value: `Bearer ${value}` }]);
  assert.equal(stored.metadata.ownerReferences?.[0]?.kind, 'Pod');
  // The pod itself carries nothing of it.
  assert.ok(!JSON.stringify(await call(gated.url, 'GET', `/v1/sandboxes/${id}`, { token })).includes(value));

  assert.equal((await call(gated.url, 'DELETE', `/v1/sandboxes/${id}`, { token })).status, 200);
  assert.deepEqual(standin.secrets.list(namespace).filter((s) => s.metadata.name === `${pod}-egress-credentials`), []);
});
