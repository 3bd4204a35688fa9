import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { after, test } from 'node:test';
import { newAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { makeTestHost } from '../helpers/test-host.ts';
import { startTestDns } from '../helpers/test-dns.ts';
import { hostProcesses } from '../helpers/processes.ts';
import { makeTestCertificates } from '../../scripts/test-tls.ts';
import { brokerBeforeStart } from '../../shared/secrets/brokering.ts';
import { prepareExec } from '../../api/services/exec/prepare.ts';
import { findOwnSandboxWithPolicy } from '../../api/services/sandboxes.ts';
import { sweepOnce } from '../../workers/reaper.ts';
import { eventually } from '../helpers/eventually.ts';

// Brokered credentials on the local runtime (docs/api.md, "Brokered secrets"): a secret with
// `inject` never enters the sandbox, and its header reaches the brokered host alone. The host is a
// test host of the test's own (a network namespace on a documentation range) serving HTTPS on 443
// with a certificate of a test authority, which Paddock trusts upstream through
// PADDOCK_EGRESS_UPSTREAM_CA; its names resolve through the test's own DNS server. The test host
// records every request it takes, read here outside the sandbox. Run once per runtime
// (PADDOCK_TEST_RUNTIME): on Kubernetes such a secret is refused (test/secrets/ holds that case).

const runtime = testRuntime();
const skip = runtime !== 'local' ? 'the local runtime brokers credentials' : process.getuid?.() !== 0 ? 'the local runtime gives sandboxes network as root only' : false;

const API = 'api.broker.paddock.example';
const PLAIN = 'plain.broker.paddock.example';
const FLOOR = 'floor.broker.paddock.example';
/** A wildcard brokered host: every name below it. */
const WILD = '*.wild.broker.paddock.example';

/** A commit the test repository's one branch names (served the dumb way: git asks for its refs first). */
const COMMIT = 'c0ffee'.padEnd(40, '0');

/** What a package index, a registry and a repository answer: enough for pip, npm and git to read. */
const PACKAGE_PAGES = {
  '/simple/tinypkg/': { type: 'text/html', body: '<!doctype html><a href="/files/tinypkg-1.0.3-py3-none-any.whl">tinypkg-1.0.3-py3-none-any.whl</a>\n' },
  '/npm/tinypkg': {
    type: 'application/json',
    body: JSON.stringify({ name: 'tinypkg', 'dist-tags': { latest: '2.0.7' }, versions: { '2.0.7': { name: 'tinypkg', version: '2.0.7', dist: { tarball: `https://${API}/npm/tinypkg/-/tinypkg-2.0.7.tgz` } } } }),
  },
  '/git/repo.git/info/refs': { type: 'text/plain', body: `${COMMIT}\trefs/heads/main\n` },
  '/git/repo.git/HEAD': { type: 'text/plain', body: 'ref: refs/heads/main\n' },
};

/**
 * A stack whose egress resolves through the test's DNS server and trusts the test authority
 * upstream (scripts/test-tls.ts), and the test host serving HTTPS with its certificate, at the
 * address the brokered name and another name of it resolve to; gone when the test is.
 */
async function brokeredWorld() {
  const certificates = makeTestCertificates([API, PLAIN, FLOOR]);
  after(() => certificates.remove());
  const dns = await startTestDns();
  const stack = await startSandboxStack({ overrides: { PADDOCK_EGRESS_RESOLVERS: dns.address, PADDOCK_EGRESS_UPSTREAM_CA: certificates.caFile } });
  const host = await makeTestHost({ tls: { cert: certificates.cert, key: certificates.key }, pages: PACKAGE_PAGES });
  dns.set(API, [host.address]);
  // Another name of the same address: what a program might send the credential to instead.
  dns.set(PLAIN, [host.address]);
  dns.set(FLOOR, ['10.0.2.2']);
  return { stack, host };
}

test('local: a brokered secret reaches its host as a header and nothing of the sandbox ever holds it; other hosts, other names for the same address, plain HTTP, a redirect and a forged Host get nothing; a change of the secret applies to the running sandbox', { skip }, async () => {
  const { stack, host } = await brokeredWorld();

  const account = await newAccount(stack.url, 'brokered');
  const token = account.key;
  const value = `tok-${randomBytes(12).toString('hex')}`;
  const created = await call(stack.url, 'POST', '/v1/sandboxes', { token, body: { network: { egress: { allow: ['*.broker.paddock.example'] } } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const secret = await call(stack.url, 'POST', '/v1/secrets', {
    token,
    body: { name: 'API_TOKEN', value, sandboxId: id, inject: { hosts: [API, FLOOR, WILD], header: 'Authorization', format: 'Bearer {value}' } },
  });
  assert.equal(secret.status, 201, JSON.stringify(secret.body));
  const sh = async (command: string) => {
    const res = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token, body: { command: ['bash', '-c', command], timeoutSeconds: 30 } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { exitCode: number | null; stdout: string; stderr: string };
  };
  const seen = async (path: string) => (await host.requests()).filter((r) => r.url === path);
  const authorization = (headers: string[]) => headers.filter((_, i) => i % 2 === 0 && headers[i]!.toLowerCase() === 'authorization').map((_, i) => i);
  const headerValues = (headers: string[], name: string) => headers.filter((_, i) => i % 2 === 1 && headers[i - 1]!.toLowerCase() === name);

  // curl, Python and Node, each as it comes, trusting the egress's authority with nothing set up;
  // the program's own Authorization is replaced, not sent beside the credential.
  const viaCurl = await sh(`curl -sS --max-time 20 -H 'Authorization: Bearer forged' https://${API}/curl`);
  assert.equal(viaCurl.exitCode, 0, viaCurl.stderr);
  assert.equal(viaCurl.stdout, 'hello over tls\n');
  const viaPython = await sh(`python3 -c "import urllib.request; print(urllib.request.urlopen('https://${API}/python', timeout=20).read().decode(), end='')"`);
  assert.equal(viaPython.exitCode, 0, viaPython.stderr);
  assert.equal(viaPython.stdout, 'hello over tls\n');
  const viaNode = await sh(`node -e "fetch('https://${API}/node').then((r) => r.text()).then((t) => process.stdout.write(t), (e) => { console.error(e.cause ?? e); process.exit(1); })"`);
  assert.equal(viaNode.exitCode, 0, viaNode.stderr);
  assert.equal(viaNode.stdout, 'hello over tls\n');
  for (const path of ['/curl', '/python', '/node']) {
    const [request] = await seen(path);
    assert.ok(request, `the test host took ${path}`);
    assert.deepEqual(headerValues(request.headers, 'authorization'), [`Bearer ${value}`], `${path}: ${JSON.stringify(request.headers)}`);
  }
  // So do httpx, pip, npm and git, with their own ways of finding authorities (certifi's bundle,
  // the system's, Node's with NODE_EXTRA_CA_CERTS, GnuTLS'), and the same header on every request.
  const viaHttpx = await sh(`python3 -c "import httpx; print(httpx.get('https://${API}/httpx', timeout=20).text, end='')"`);
  assert.equal(viaHttpx.stdout, 'hello over tls\n', viaHttpx.stderr);
  const viaPip = await sh(`python3 -m pip index versions tinypkg --index-url https://${API}/simple/ --no-cache-dir --disable-pip-version-check 2>&1`);
  assert.match(viaPip.stdout, /tinypkg \(1\.0\.3\)/, viaPip.stdout);
  const viaNpm = await sh(`npm view tinypkg version --registry https://${API}/npm/ --cache /tmp/npm-cache --no-update-notifier 2>&1`);
  assert.equal(viaNpm.stdout.trim(), '2.0.7', viaNpm.stdout);
  const viaGit = await sh(`GIT_TERMINAL_PROMPT=0 git ls-remote https://${API}/git/repo.git 2>&1`);
  assert.match(viaGit.stdout, new RegExp(`^${COMMIT}\trefs/heads/main$`, 'm'), viaGit.stdout);
  for (const path of ['/httpx', '/simple/tinypkg/', '/npm/tinypkg', '/git/repo.git/info/refs?service=git-upload-pack']) {
    const requests = await seen(path);
    assert.ok(requests.length > 0, `the test host took ${path}: ${JSON.stringify((await host.requests()).map((r) => r.url))}`);
    for (const request of requests) assert.deepEqual(headerValues(request.headers, 'authorization'), [`Bearer ${value}`], `${path}: ${JSON.stringify(request.headers)}`);
  }

  // Nothing the sandbox can read holds the value: its environment, any process's, its files.
  // (Looked for by its prefix in the files: the value itself never goes into the sandbox, not even in a command.)
  const looked = await sh(`env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; grep -rIl -- 'tok-' /etc /tmp /workspace 2>/dev/null; echo done`);
  assert.ok(!looked.stdout.includes(value), 'the value is readable in the sandbox');
  assert.ok(!looked.stdout.includes('API_TOKEN'), `the secret is an environment variable: ${looked.stdout}`);
  assert.doesNotMatch(looked.stdout, /tok-/);
  assert.match(looked.stdout, /done\n$/);

  // Another name of the same address: to the test host directly (its authority is not the
  // sandbox's, hence -k), and without the header. Sent to the broker by its address, refused at the handshake.
  const direct = await sh(`curl -sS -k --max-time 20 https://${PLAIN}/direct`);
  assert.equal(direct.stdout, 'hello over tls\n', direct.stderr);
  assert.deepEqual(authorization((await seen('/direct'))[0]!.headers), []);
  const disguised = await sh(`curl -sS -k --max-time 20 --resolve ${PLAIN}:443:127.0.0.54 https://${PLAIN}/disguised`);
  assert.notEqual(disguised.exitCode, 0, disguised.stdout);
  // A forged Host on the brokered connection is refused there; plain HTTP reaches nothing.
  const forged = await sh(`curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -H 'Host: ${PLAIN}' https://${API}/forged`);
  assert.equal(forged.stdout, '421');
  const plainHttp = await sh(`curl -sS --max-time 5 http://${API}/plain`);
  assert.notEqual(plainHttp.exitCode, 0, plainHttp.stdout);
  // A redirect to another host is followed without the credential.
  const redirected = await sh(`curl -sS -k -L --max-time 20 https://${API}/redirect/${PLAIN}/landed`);
  assert.equal(redirected.stdout, 'hello over tls\n', redirected.stderr);
  assert.deepEqual(authorization((await seen('/landed'))[0]!.headers), []);
  assert.equal((await seen('/forged')).length + (await seen('/plain')).length + (await seen('/disguised')).length, 0);
  // A brokered name that resolves into the floor is reached by nothing; the broker's answer names no value.
  const floor = await sh(`curl -sS --max-time 20 https://${FLOOR}/`);
  assert.match(floor.stdout, /could not reach/);
  assert.ok(!floor.stdout.includes(value) && !floor.stderr.includes(value));
  // Connections held open and silent: the egress keeps at most 64 of a sandbox's (it closes the
  // others at once), and none past its 10 s for a handshake; then the brokered host is reached again.
  const held = await sh(`python3 -c "
import socket, time
held = [socket.create_connection(('127.0.0.54', 443)) for _ in range(80)]
def still_open():
    time.sleep(1)
    n = 0
    for s in held:
        s.setblocking(False)
        try:
            n += s.recv(1) != b''
        except BlockingIOError:
            n += 1
        except OSError:
            pass
    return n
print(still_open())
time.sleep(10)
print(still_open())
"`);
  assert.equal(held.stdout.trim(), '64\n0', held.stdout + held.stderr);
  assert.equal((await sh(`curl -sS --max-time 20 https://${API}/after-held`)).stdout, 'hello over tls\n');
  // A wildcard host covers endless names, each a certificate to make: past the sandbox's budget
  // of new names (20 at once), a new one's handshake is refused. (The names have no address
  // upstream: those made are answered 502.)
  const names = await sh(`for i in $(seq 1 26); do curl -s -o /dev/null --max-time 20 -w '%{http_code}\\n' https://n$i${WILD.slice(1)}/; done`);
  const codes = names.stdout.trim().split('\n');
  assert.equal(codes.length, 26, names.stdout);
  // The budget's burst (20), less the names made before (this sandbox's brokered host and the
  // floor's), plus what it refills meanwhile (one every 3 s: a few on a loaded host); the rest refused.
  const made = codes.filter((c) => c === '502').length;
  assert.ok(made >= 15 && made <= 24, names.stdout);
  assert.equal(codes.filter((c) => c === '000').length, 26 - made, names.stdout);

  // The value lives in the broker's memory alone: not on its command line, not in any file of the data directory.
  const dataDir = realpathSync(stack.config.PADDOCK_DATA_DIR);
  const broker = hostProcesses().find((p) => p.args.some((a) => a.endsWith('egress-resolver-main.ts')) && p.args.some((a) => a.includes(dataDir)));
  assert.ok(broker, 'the host runs the egress broker');
  assert.ok(!broker.args.some((a) => a.includes(value)));
  // grep exits 1 when it finds nothing, which is what must happen.
  const inData = (() => {
    try {
      return execFileSync('grep', ['-rIl', '--', value, dataDir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch (err) {
      return String((err as { stdout?: string }).stdout ?? '');
    }
  })();
  assert.equal(inData.trim(), '', 'the value is in a file of the data directory');

  // Replaced, the next request carries the new value; removed, the name resolves to the host
  // itself again, and the request goes on without any header.
  const replaced = `tok-${randomBytes(12).toString('hex')}`;
  const put = await call(stack.url, 'POST', '/v1/secrets', { token, body: { name: 'API_TOKEN', value: replaced, sandboxId: id, inject: { hosts: [API], format: 'token {value}' } } });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal((await sh(`curl -sS --max-time 20 https://${API}/replaced`)).stdout, 'hello over tls\n');
  assert.deepEqual(headerValues((await seen('/replaced'))[0]!.headers, 'authorization'), [`token ${replaced}`]);
  const removed = await call(stack.url, 'DELETE', `/v1/secrets/API_TOKEN?sandboxId=${id}`, { token });
  assert.equal(removed.status, 204);
  const after = await sh(`curl -sS -k --max-time 20 https://${API}/removed`);
  assert.equal(after.stdout, 'hello over tls\n', after.stderr);
  assert.deepEqual(authorization((await seen('/removed'))[0]!.headers), []);
});

test('local: under egress `all` an account-wide brokered secret reaches each sandbox\'s requests to its host, and the host alone', { skip }, async () => {
  const { stack, host } = await brokeredWorld();
  const account = await newAccount(stack.url, 'brokered-all');
  const value = `tok-${randomBytes(12).toString('hex')}`;
  const secret = await call(stack.url, 'POST', '/v1/secrets', { token: account.key, body: { name: 'SERVICE_KEY', value, inject: { hosts: [API], header: 'X-Api-Key', format: '{value}' } } });
  assert.equal(secret.status, 201, JSON.stringify(secret.body));
  const created = await call(stack.url, 'POST', '/v1/sandboxes', { token: account.key, body: { network: { egress: 'all' } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const run = await call(stack.url, 'POST', `/v1/sandboxes/${created.body.id}/exec`, {
    token: account.key,
    body: { command: ['bash', '-c', `curl -sS --max-time 20 https://${API}/all && curl -sS -k --max-time 20 https://${PLAIN}/all-plain`], timeoutSeconds: 60 },
  });
  assert.equal(run.status, 200, JSON.stringify(run.body));
  assert.equal(run.body.stdout, 'hello over tls\nhello over tls\n', run.body.stderr);
  const requests = await host.requests();
  const key = (path: string) => {
    const headers = requests.find((r) => r.url === path)!.headers;
    return headers.filter((_, i) => i % 2 === 1 && headers[i - 1]!.toLowerCase() === 'x-api-key');
  };
  assert.deepEqual(key('/all'), [value]);
  assert.deepEqual(key('/all-plain'), []);
});

/**
 * A sandbox of a new account in the brokered world, allowed the test's names: `secret(value)`
 * writes its one brokered secret, for API; `authorizationOn(path)` waits for the test host's first
 * request on `path` and answers the Authorization values it carried.
 */
async function brokeredSandbox(label: string) {
  const world = await brokeredWorld();
  const { stack, host } = world;
  const account = await newAccount(stack.url, label);
  const token = account.key;
  const created = await call(stack.url, 'POST', '/v1/sandboxes', { token, body: { network: { egress: { allow: ['*.broker.paddock.example'] } } } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const secret = (value: string) => call(stack.url, 'POST', '/v1/secrets', { token, body: { name: 'BROKERED_TOKEN', value, sandboxId: id, inject: { hosts: [API] } } });
  const authorizationOn = async (path: string) => {
    const [first] = await eventually(`a request on ${path} at the host`, 30_000, async () => {
      const requests = (await host.requests()).filter((r) => r.url === path);
      return requests.length > 0 ? requests : undefined;
    });
    return first!.headers.filter((_, i) => i % 2 === 1 && first!.headers[i - 1]!.toLowerCase() === 'authorization');
  };
  /** Starts `script` in the background: nothing else starts in the sandbox until the test says. */
  const background = async (script: string) => {
    const started = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token, body: { command: ['bash', '-c', script], background: true } });
    assert.equal(started.status, 202, JSON.stringify(started.body));
  };
  const go = async () => assert.equal((await call(stack.url, 'PUT', `/v1/sandboxes/${id}/files?path=go`, { token, body: { content: '' } })).status, 201);
  return { stack, account, id, secret, authorizationOn, background, go };
}

test("local: a start whose secrets were read before a change, its send landing after the change's, leaves the egress with the change; a program already running uses it", { skip }, async () => {
  const { stack, account, id, secret, authorizationOn, background, go } = await brokeredSandbox('brokered-race');
  const old = `old-${randomBytes(8).toString('hex')}`;
  assert.equal((await secret(old)).status, 201);
  // A program started now, that sends its request once told to.
  await background(`while [ ! -e /workspace/go ]; do sleep 0.1; done; curl -sS --max-time 20 https://${API}/race > /workspace/race.out 2>&1`);

  // A start's read of the secrets, before the change; its send, after the change's own.
  const deps = stack.apis[0]!.deps;
  const stale = prepareExec(deps, await findOwnSandboxWithPolicy(deps, account.id, id), { command: ['true'] });
  assert.deepEqual(stale.brokering.credentials.map((c) => c.value), [`Bearer ${old}`]);
  const fresh = `new-${randomBytes(8).toString('hex')}`;
  assert.equal((await secret(fresh)).status, 200);
  await brokerBeforeStart(deps.runtime, id, stale.brokering);

  await go();
  assert.deepEqual(await authorizationOn('/race'), [`Bearer ${fresh}`]);
});

test('local: an egress that died and was started again gets the brokered credentials again with no start in the sandbox; a program already running uses them', { skip }, async () => {
  const { stack, secret, authorizationOn, background, go } = await brokeredSandbox('brokered-restart');
  const value = `tok-${randomBytes(8).toString('hex')}`;
  assert.equal((await secret(value)).status, 201);
  // A program started now (its start sends the credentials), that once told to tries its request until it passes.
  await background(`for i in $(seq 1 120); do [ -e /workspace/go ] && curl -sS --max-time 5 https://${API}/after-restart && break; sleep 0.5; done`);

  // The host's egress process dies, and the workers' sweep starts it again.
  const dataDir = realpathSync(stack.config.PADDOCK_DATA_DIR);
  const egress = () => hostProcesses().find((p) => p.args.some((a) => a.endsWith('egress-resolver-main.ts')) && p.args.some((a) => a.includes(dataDir)));
  const first = egress();
  assert.ok(first, 'the host runs the egress process');
  process.kill(first.pid, 'SIGKILL');
  await eventually('the egress process gone', 10_000, async () => (egress()?.pid === first.pid ? undefined : true));
  await eventually('a sweep runs', 20_000, () => sweepOnce(stack.workers[0]!.deps), 10);
  const again = egress();
  assert.ok(again && again.pid !== first.pid, 'the sweep started the egress process again');

  await go();
  assert.deepEqual(await authorizationOn('/after-restart'), [`Bearer ${value}`]);
});
