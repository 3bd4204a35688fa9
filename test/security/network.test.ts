import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostListener, makeTestHost } from '../helpers/test-host.ts';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';

// A sandbox with network (PADDOCK_LOCAL_NETWORK=true: egress all by default), through the HTTP API: it reaches a host
// outside, and nothing of the host it runs on. The host outside is one this test makes: a network
// namespace of its own, joined to this one by a veth pair on a documentation range (RFC 5737)
// that routes nowhere else (test/helpers/test-host.ts). No traffic goes to any other address: that
// private and link-local ranges are refused is shown by the filter's own tests
// (test/runtime/egress-filter.test.ts). A policy per sandbox: test/sandboxes/network.test.ts.

const skip =
  testRuntime() !== 'local' ? 'the local runtime only' : process.getuid?.() !== 0 ? 'needs root (network namespaces)' : false;

test('with network, a sandbox reaches a host outside but nothing of its own host', { skip }, async () => {
  const testHost = await makeTestHost();
  const stack = await startSandboxStack({ overrides: { PADDOCK_LOCAL_NETWORK: 'true' } });
  const account = await newAccount(stack.url, 'network');
  const created = await call(stack.url, 'POST', '/v1/sandboxes', { token: account.key, body: {} });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const sh = async (command: string) => {
    const res = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: account.key, body: { command, timeoutSeconds: 10 } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { exitCode: number | null; stdout: string; stderr: string };
  };
  // bash's /dev/tcp (commands run under sh): the sandbox sees the host's /usr, so bash is there.
  const bash = (script: string) => sh(`bash -c '${script.replaceAll("'", "'\\''")}'`);
  const fetch = (host: string, port: number) =>
    bash(`exec 3<>/dev/tcp/${host}/${port} && printf 'GET / HTTP/1.0\\r\\nHost: t\\r\\n\\r\\n' >&3 && cat <&3`);

  const page = await fetch(testHost.address, testHost.port);
  assert.equal(page.exitCode, 0, page.stderr);
  assert.match(page.stdout, /^HTTP\/1\.[01] 200/);
  assert.match(page.stdout, /hello from the test host/);
  assert.equal(await testHost.served(), 1);

  const loopback = await hostListener('127.0.0.1');
  const hostEnd = await hostListener(testHost.hostEnd);
  const refused: [string, number][] = [
    ['127.0.0.1', loopback.port],
    // The host end of the link is an address of this host: its services listen there too.
    [testHost.hostEnd, hostEnd.port],
    // The stack's own Redis and PostgreSQL.
    ['127.0.0.1', Number(new URL(stack.config.REDIS_URL).port)],
    ['127.0.0.1', Number(new URL(stack.config.DATABASE_URL).port)],
  ];
  for (const [host, port] of refused) {
    const started = Date.now();
    const res = await bash(`exec 3<>/dev/tcp/${host}/${port} && printf 'PING\\r\\n' >&3 && head -c 40 <&3`);
    assert.notEqual(res.exitCode, 0, `reached ${host}:${port}: ${res.stdout}`);
    assert.doesNotMatch(res.stdout, /hello|PONG|NOAUTH/);
    // Refused (a reset), not left to time out.
    assert.ok(Date.now() - started < 5000, `${host}:${port} took ${Date.now() - started} ms to fail`);
  }
  assert.equal(loopback.connections(), 0, 'the loopback listener saw a connection');
  assert.equal(hostEnd.connections(), 0, 'the host-end listener saw a connection');

  // The sandbox cannot lift the filter: it has no capability over its network namespace.
  const lift = await sh('nft flush ruleset; ip link set tap0 down; ip route del default; echo done');
  assert.match(lift.stdout, /done/);
  assert.match(lift.stderr, /Operation not permitted|must be root/);
  const again = await fetch(testHost.address, testHost.port);
  assert.match(again.stdout, /hello from the test host/, 'its link and routes are untouched');
  assert.notEqual((await bash(`exec 3<>/dev/tcp/127.0.0.1/${loopback.port}`)).exitCode, 0);
  assert.equal(loopback.connections(), 0);
  assert.equal(await testHost.served(), 2);
});
