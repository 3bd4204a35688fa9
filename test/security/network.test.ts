import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';

// A sandbox with network (PADDOCK_LOCAL_NETWORK=true), through the HTTP API: it reaches a host
// outside, and nothing of the host it runs on. The host outside is one this test makes: a network
// namespace of its own, joined to this one by a veth pair on a documentation range (RFC 5737)
// that routes nowhere else. No traffic goes to any other address: that private and link-local
// ranges are refused is shown by the filter's own tests (test/runtime/egress-filter.test.ts).
// Kubernetes sandboxes get network through a NetworkPolicy, tested with the manifests.

const skip =
  testRuntime() !== 'local' ? 'the local runtime only' : process.getuid?.() !== 0 ? 'needs root (network namespaces)' : false;

/** A test host in a namespace of its own, at 198.51.100.x; the host end of its link at another x. */
interface TestHost {
  address: string;
  hostEnd: string;
  port: number;
  /** Connections the test host's server took. */
  served(): Promise<number>;
}

async function makeTestHost(): Promise<TestHost> {
  const tag = randomBytes(4).toString('hex');
  const netns = `paddock-t-${tag}`;
  const [outer, inner] = [`pdk${tag}h`, `pdk${tag}n`];
  // A /30 of its own within 198.51.100.0/24, so that two runs on one machine do not collide.
  const base = 4 * randomInt(64);
  const [hostEnd, address] = [`198.51.100.${base + 1}`, `198.51.100.${base + 2}`];
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  after(() => {
    for (const args of [['link', 'del', outer], ['netns', 'del', netns]]) {
      try {
        ip(...args);
      } catch {
        // already gone (the link goes with the namespace)
      }
    }
  });
  ip('netns', 'add', netns);
  ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner);
  ip('link', 'set', inner, 'netns', netns);
  ip('addr', 'add', `${hostEnd}/30`, 'dev', outer);
  ip('link', 'set', outer, 'up');
  ip('-n', netns, 'addr', 'add', `${address}/30`, 'dev', inner);
  ip('-n', netns, 'link', 'set', inner, 'up');
  ip('-n', netns, 'link', 'set', 'lo', 'up');

  // A web server inside it, that says how many connections it took on each line of its stdin.
  const script = `
    let served = 0;
    const server = require('node:http').createServer((req, res) => res.end('hello from the test host\\n'));
    server.on('connection', () => served++);
    server.listen(0, ${JSON.stringify(address)}, () => console.log(server.address().port));
    process.stdin.on('data', () => console.log(served));
    process.stdin.on('end', () => process.exit(0));`;
  const child: ChildProcess = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  after(() => {
    child.stdin?.end();
    child.kill();
  });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += String(chunk);
    for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      const next = waiting.shift();
      if (next) next(line);
      else lines.push(line);
    }
  });
  const nextLine = () =>
    lines.length > 0
      ? Promise.resolve(lines.shift()!)
      : Promise.race([
          new Promise<string>((resolve) => waiting.push(resolve)),
          once(child, 'exit').then(() => Promise.reject(new Error('the test host exited'))),
        ]);
  const port = Number(await nextLine());
  return {
    address,
    hostEnd,
    port,
    async served() {
      child.stdin!.write('\n');
      return Number(await nextLine());
    },
  };
}

/** A listener on this host that counts who connects. */
async function hostListener(address: string): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.end('hello from the host\n');
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  after(() => server.close());
  return { port: (server.address() as AddressInfo).port, connections: () => connections };
}

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
