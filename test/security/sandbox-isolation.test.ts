import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount, type TestAccount } from '../helpers/accounts.ts';
import { Workspace } from './fixtures.ts';

// The sandbox boundary, tried through the HTTP API as a user would (exec and the file routes),
// on whichever runtime the suite runs on. What the local runtime does underneath (uids, cgroups,
// namespaces) is tested directly in test/runtime/local-isolation.test.ts; the pod spec in
// test/deploy/pod-security.test.ts.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });
const [alice, mallory] = await Promise.all([newAccount(stack.url, 'alice'), newAccount(stack.url, 'mallory')]);
const aliceSpace = new Workspace(stack.url, alice);
const mallorySpace = new Workspace(stack.url, mallory);

async function sh(account: TestAccount, sandboxId: string, command: string, timeoutSeconds = 10) {
  const res = await call(stack.url, 'POST', `/v1/sandboxes/${sandboxId}/exec`, { token: account.key, body: { command, timeoutSeconds } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as { exitCode: number | null; stdout: string; stderr: string; timedOut: boolean };
}

const portOf = (url: string, fallback: number) => Number(new URL(url).port || fallback);

test('commands run as an unprivileged user, without capabilities, and cannot become root', async () => {
  const id = await aliceSpace.sandboxId();
  assert.notEqual((await sh(alice, id, 'id -u')).stdout.trim(), '0');
  const status = (await sh(alice, id, 'grep -E "^(Uid|CapEff|CapPrm)" /proc/self/status')).stdout;
  assert.doesNotMatch(status, /^Uid:\s+0\s/m, status);
  assert.match(status, /^CapEff:\s+0+$/m, status);
  for (const attempt of ['sudo -n id -u', 'su -c "id -u" root </dev/null', 'chroot / id -u', 'mount -t tmpfs none /mnt', 'touch /usr/bin/planted', 'chown 0 /workspace']) {
    const res = await sh(alice, id, attempt);
    assert.ok(res.exitCode !== 0 || res.stdout.trim() !== '0', `${attempt}: ${JSON.stringify(res)}`);
  }
});

test("the host's files are out of reach: /etc/shadow, the project tree, the data folder", async () => {
  const id = await aliceSpace.sandboxId();
  const hostShadow = existsSync('/etc/shadow') ? readFileSync('/etc/shadow', 'utf8').split('\n')[0]! : 'root:';
  const res = await sh(alice, id, 'cat /etc/shadow; cat ../../../../etc/shadow; cat /proc/1/root/etc/shadow');
  assert.ok(!res.stdout.includes(hostShadow), 'the host /etc/shadow was read');
  for (const path of [process.cwd(), `${process.cwd()}/package.json`, '/work', stack.config.PADDOCK_DATA_DIR, '/root', '/home']) {
    const listed = await sh(alice, id, `ls -d '${path}' && cat '${path}' 2>/dev/null | head -c 100`);
    assert.notEqual(listed.exitCode, 0, `${path} is visible: ${listed.stdout}`);
  }
  // Through the file routes, which run inside the sandbox too.
  for (const path of ['/etc/shadow', '../../../../etc/shadow', `${process.cwd()}/package.json`, `${stack.config.PADDOCK_DATA_DIR}/sandboxes`]) {
    const view = await call(stack.url, 'GET', `/v1/sandboxes/${id}/files?path=${encodeURIComponent(path)}`, { token: alice.key });
    assert.equal(view.status, 404, `${path}: ${view.status} ${JSON.stringify(view.body).slice(0, 200)}`);
  }
  const glob = await call(stack.url, 'GET', `/v1/sandboxes/${id}/files/glob?pattern=${encodeURIComponent('/**/package.json')}`, { token: alice.key });
  assert.equal(glob.status, 200);
  assert.ok(!glob.body.matches.some((m: string) => m.includes('paddock') || m.startsWith('/work')), JSON.stringify(glob.body.matches));
});

test("the host's processes are invisible", async () => {
  const id = await aliceSpace.sandboxId();
  const ps = await sh(alice, id, 'ps -eo pid=,comm=');
  const lines = ps.stdout.trim().split('\n');
  // Its init, this command with the runtime's wrapper (four processes deep on Kubernetes) and what
  // an earlier command left being reaped: a handful, where the host runs hundreds.
  const host = readdirSync('/proc').filter((name) => /^\d+$/.test(name)).length;
  assert.ok(lines.length <= 12 && lines.length * 10 < host, `sees ${lines.length} processes (the host runs ${host}):\n${ps.stdout}`);
  assert.doesNotMatch(ps.stdout, /node|postgres|redis|bwrap|containerd|kubelet/);
  const proc = await sh(alice, id, `cat /proc/${process.pid}/cmdline /proc/${process.pid}/environ 2>/dev/null | tr "\\0" " "`);
  assert.doesNotMatch(proc.stdout, /node|DATABASE_URL|PADDOCK_/);
});

test('no network by default: not the host Redis, PostgreSQL, the API, nor any host address', async () => {
  const id = await aliceSpace.sandboxId();
  const targets = [
    ['127.0.0.1', portOf(stack.config.REDIS_URL, 6379)],
    ['127.0.0.1', portOf(stack.config.DATABASE_URL, 5432)],
    ['127.0.0.1', portOf(stack.url, 80)],
    ...Object.values(networkInterfaces())
      .flat()
      .filter((i) => i && i.family === 'IPv4' && !i.internal)
      .slice(0, 2)
      .map((i) => [i!.address, portOf(stack.config.REDIS_URL, 6379)] as const),
  ] as const;
  for (const [host, port] of targets) {
    const res = await sh(alice, id, `exec 3<>/dev/tcp/${host}/${port} && printf 'PING\\r\\n' >&3 && head -c 20 <&3`, 5);
    assert.notEqual(res.exitCode, 0, `reached ${host}:${port}: ${res.stdout}`);
    assert.doesNotMatch(res.stdout, /PONG/);
  }
  const devices = (await sh(alice, id, 'cat /proc/net/dev')).stdout.trim().split('\n').slice(2);
  assert.deepEqual(devices.map((l) => l.trim().split(':')[0]), ['lo'], 'only the loopback device');
});

test("another sandbox's files are invisible, of the same account or another", async () => {
  const aliceFirst = await aliceSpace.sandboxId();
  const aliceSecond = (await call(stack.url, 'POST', '/v1/sandboxes', { token: alice.key, body: {} })).body.id as string;
  const malloryBox = await mallorySpace.sandboxId();
  const marker = `isolation-marker-${Date.now()}`;
  await sh(alice, aliceFirst, `echo ${marker} > /workspace/secret-a; echo ${marker} > /tmp/secret-a`);
  assert.equal((await sh(alice, aliceFirst, 'cat /workspace/secret-a')).stdout, `${marker}\n`);
  const search =
    'find / -path /proc -prune -o -path /sys -prune -o -path /usr -prune -o -name "secret-a*" -print 2>/dev/null; ' +
    'cat /proc/*/root/workspace/secret-a /proc/*/root/tmp/secret-a 2>/dev/null; ' +
    `grep -rl ${marker} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr 2>/dev/null`;
  for (const [account, id] of [[alice, aliceSecond], [mallory, malloryBox]] as const) {
    const found = await sh(account, id, search, 20);
    assert.equal(found.stdout, '', `${id} found: ${found.stdout}`);
    const glob = await call(stack.url, 'GET', `/v1/sandboxes/${id}/files/glob?pattern=${encodeURIComponent('/**/secret-a')}`, { token: account.key });
    assert.deepEqual(glob.body.matches, []);
  }
});

test("the host's environment and another account's secrets never reach a sandbox", async () => {
  await call(stack.url, 'POST', '/v1/secrets', { token: alice.key, body: { name: 'ALICE_TOKEN', value: 'alice-only-secret-value' } });
  const id = await mallorySpace.sandboxId();
  const env = (await sh(mallory, id, 'env; cat /proc/1/environ | tr "\\0" "\\n"')).stdout;
  const config = stack.config;
  for (const value of [config.DATABASE_URL, config.REDIS_URL, config.PADDOCK_JWT_SECRET!, config.PADDOCK_SECRETS_KEY!, 'alice-only-secret-value']) {
    assert.ok(!env.includes(value), 'a host or foreign secret in the sandbox environment');
  }
  assert.doesNotMatch(env, /^(PADDOCK_|DATABASE_URL|REDIS_URL|ALICE_TOKEN)/m);
});
