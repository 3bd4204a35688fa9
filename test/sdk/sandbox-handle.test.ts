import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandHandle, Filesystem, LocalArchiveError, MissingConfigError, PaddockApiError, PaddockClient, PaddockError, Preview, Sandbox } from '../../shared/sdk/index.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { newAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

// The Sandbox handle against a real API: one sandbox carries the commands and files tests, so the
// file stays fast; another account's handle stands in for a hostile tenant.

const api = await startSandboxStack();
const account = await newAccount(api.url, 'sdk-handle');
const conn = { apiKey: account.key, baseUrl: api.url };
const sbx = await Sandbox.create({ ...conn, env: { GREETING: 'hello' }, metadata: { via: 'handle' }, timeout: 600 });

test('create answers a running sandbox with its metadata; info, list and connect see it', async () => {
  assert.match(sbx.id, /^sbx_/);
  const info = await sbx.info();
  assert.equal(info.status, 'running');
  assert.deepEqual(info.metadata, { via: 'handle' });
  assert.ok((await Sandbox.list(conn)).some((s) => s.id === sbx.id));
  const again = await Sandbox.connect(sbx.id, conn);
  assert.equal((await again.commands.run('echo $GREETING')).stdout, 'hello\n');
});

test('commands.run: a string through sh -c, an array as argv, cwd, env, stdin, a non-zero exit and a timeout are results', async () => {
  const r = await sbx.commands.run('echo out; echo err >&2; exit 3');
  assert.deepEqual([r.exitCode, r.stdout, r.stderr, r.timedOut], [3, 'out\n', 'err\n', false]);
  assert.equal(typeof r.durationMs, 'number');
  assert.equal((await sbx.commands.run(['echo', '$HOME; x'])).stdout, '$HOME; x\n');
  assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n');
  assert.equal((await sbx.commands.run('echo $A', { env: { A: 'b' } })).stdout, 'b\n');
  assert.equal((await sbx.commands.run('cat', { stdin: 'piped' })).stdout, 'piped');
  const slow = await sbx.commands.run('sleep 5', { timeout: 1 });
  assert.equal(slow.timedOut, true);
});

test('commands.run with onStdout/onStderr streams: the handlers see each chunk before the result', async () => {
  const out: string[] = [];
  const err: string[] = [];
  const r = await sbx.commands.run('echo one; echo two >&2; echo three', { onStdout: (d) => void out.push(d), onStderr: (d) => void err.push(d) });
  assert.equal(out.join(''), 'one\nthree\n');
  assert.equal(err.join(''), 'two\n');
  assert.deepEqual([r.exitCode, r.stdout, r.stderr], [0, 'one\nthree\n', 'two\n']);
});

test('a background command: a handle at once; sendStdin, logs, wait; kill ends a running one', async () => {
  const seen: string[] = [];
  const proc = await sbx.commands.run('read line; echo "got $line"; exit 4', { background: true, onStdout: (d) => void seen.push(d) });
  assert.ok(proc instanceof CommandHandle);
  assert.match(proc.id, /^proc_/);
  await proc.sendStdin('ping\n');
  const done = await proc.wait();
  assert.deepEqual([done.exitCode, done.stdout], [4, 'got ping\n']);
  assert.equal(seen.join(''), 'got ping\n', 'wait() hands the output to the handlers given to run');
  assert.equal((await proc.logs()).stdout, 'got ping\n');
  const sleeper = await sbx.commands.run('sleep 60', { background: true });
  await sleeper.kill('KILL');
  const killed = await sleeper.wait();
  assert.equal(killed.exitCode, null);
  assert.match(killed.signal ?? '', /KILL/);
});

test('files: write (string, bytes, stream), read, readText, stat, exists, list, move, makeDir, remove', async () => {
  await sbx.files.makeDir('/tmp/h/d');
  await sbx.files.write('/tmp/h/a.txt', 'hello');
  assert.equal(await sbx.files.readText('/tmp/h/a.txt'), 'hello');
  const bytes = new Uint8Array([0, 1, 2, 255]);
  await sbx.files.write('/tmp/h/b.bin', bytes);
  assert.deepEqual(await sbx.files.read('/tmp/h/b.bin'), bytes);
  const stream = new ReadableStream<Uint8Array>({ start(c) { c.enqueue(new TextEncoder().encode('str')); c.enqueue(new TextEncoder().encode('eam')); c.close(); } });
  await sbx.files.write('/tmp/h/c.txt', stream);
  async function* gen() { yield new TextEncoder().encode('it'); yield new TextEncoder().encode('er'); }
  await sbx.files.write('/tmp/h/d/e.txt', gen());
  assert.equal(await sbx.files.readText('/tmp/h/c.txt'), 'stream');
  assert.equal(await sbx.files.readText('/tmp/h/d/e.txt'), 'iter');
  assert.equal((await sbx.files.stat('/tmp/h/b.bin')).size, 4);
  assert.equal(await sbx.files.exists('/tmp/h/a.txt'), true);
  assert.equal(await sbx.files.exists('/tmp/h/nope'), false);
  assert.deepEqual((await sbx.files.list('/tmp/h')).map((e) => e.name).sort(), ['a.txt', 'b.bin', 'c.txt', 'd']);
  await assert.rejects(sbx.files.move('/tmp/h/a.txt', '/tmp/h/c.txt'), (e) => e instanceof PaddockApiError && e.code === 'file_exists' && e.status === 409);
  await sbx.files.move('/tmp/h/a.txt', '/tmp/h/c.txt', { overwrite: true });
  assert.equal(await sbx.files.readText('/tmp/h/c.txt'), 'hello');
  await assert.rejects(sbx.files.remove('/tmp/h/d'), (e) => e instanceof PaddockError && (e as PaddockApiError).code === 'directory_not_empty');
  await sbx.files.remove('/tmp/h', { recursive: true });
  assert.equal(await sbx.files.exists('/tmp/h'), false);
  await assert.rejects(sbx.files.read('/tmp/h/a.txt'), (e) => e instanceof PaddockApiError && e.code === 'file_not_found' && e.status === 404);
});

test('errors are PaddockErrors with code and status: another account sees no sandbox, a timeout past the cap is refused', async () => {
  const other = await newAccount(api.url, 'sdk-handle-other');
  await assert.rejects(Sandbox.connect(sbx.id, { apiKey: other.key, baseUrl: api.url }), (e) => e instanceof PaddockError && e instanceof PaddockApiError && e.code === 'sandbox_not_found' && e.status === 404);
  await assert.rejects(sbx.setTimeout(31_000_000), (e) => e instanceof PaddockApiError && e.code === 'timeout_past_cap' && e.status >= 400);
  await assert.rejects(Sandbox.connect('sbx_nope', { apiKey: 'pdk_live_wrong', baseUrl: api.url }), (e) => e instanceof PaddockApiError && e.status === 401);
});

test('configuration: the environment stands in for the arguments; none at all is a MissingConfigError', async () => {
  const saved = { key: process.env.PADDOCK_API_KEY, url: process.env.PADDOCK_BASE_URL };
  try {
    delete process.env.PADDOCK_API_KEY;
    delete process.env.PADDOCK_BASE_URL;
    await assert.rejects(Sandbox.create(), (e) => e instanceof MissingConfigError && e instanceof PaddockError && e.code === 'missing_api_key' && /PADDOCK_API_KEY/.test(e.message));
    process.env.PADDOCK_API_KEY = account.key;
    await assert.rejects(Sandbox.list(), (e) => e instanceof MissingConfigError && e.code === 'missing_base_url');
    process.env.PADDOCK_BASE_URL = 'http://paddock.example';
    await assert.rejects(Sandbox.list(), (e) => e instanceof PaddockError && e.name === 'InsecureBaseUrlError');
    process.env.PADDOCK_BASE_URL = api.url;
    assert.ok((await Sandbox.list()).some((s) => s.id === sbx.id));
  } finally {
    if (saved.key === undefined) delete process.env.PADDOCK_API_KEY;
    else process.env.PADDOCK_API_KEY = saved.key;
    if (saved.url === undefined) delete process.env.PADDOCK_BASE_URL;
    else process.env.PADDOCK_BASE_URL = saved.url;
  }
});

/** Every entry under dir, relative, with its type, permission bits and content (or link target). */
function treeOf(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix)).sort().flatMap((name) => {
    const rel = prefix ? `${prefix}/${name}` : name;
    const st = lstatSync(join(dir, rel));
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isSymbolicLink()) return [`${rel} link ${readlinkSync(join(dir, rel))}`];
    if (st.isDirectory()) return [`${rel} dir ${mode}`, ...treeOf(dir, rel)];
    return [`${rel} file ${mode} ${readFileSync(join(dir, rel)).toString('base64')}`];
  });
}

test('files.uploadDir and downloadDir: a tree goes and comes back with the same bytes, modes and links', async () => {
  const work = mkdtempSync(join(tmpdir(), 'paddock-sdk-dir-'));
  try {
    const src = join(work, 'src');
    const long = `${'p'.repeat(60)}/${'q'.repeat(60)}`;
    mkdirSync(join(src, 'a/b/c'), { recursive: true });
    mkdirSync(join(src, long), { recursive: true });
    writeFileSync(join(src, 'a/b/c/nested.txt'), 'nested\n');
    writeFileSync(join(src, 'empty'), '');
    writeFileSync(join(src, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 'paddock'), { mode: 0o755 });
    writeFileSync(join(src, `${long}/${'r'.repeat(30)}.txt`), 'far down\n');
    writeFileSync(join(src, 'a/with space é 名.txt'), 'utf-8\n', { mode: 0o600 });
    symlinkSync('a/b/c/nested.txt', join(src, 'link'));
    const sent = await sbx.files.uploadDir(src, '/tmp/dir-rt');
    assert.equal(sent.path, '/tmp/dir-rt');
    assert.equal(sent.files, 11);
    assert.ok(sent.bytes > 3 * 1024 * 1024);
    assert.equal((await sbx.commands.run(['readlink', '/tmp/dir-rt/link'])).stdout, 'a/b/c/nested.txt\n');
    assert.equal(await sbx.files.readText('/tmp/dir-rt/a/with space é 名.txt'), 'utf-8\n');
    assert.equal((await sbx.files.stat(`/tmp/dir-rt/${long}/${'r'.repeat(30)}.txt`)).size, 9);
    const back = join(work, 'back');
    assert.equal(await sbx.files.downloadDir('/tmp/dir-rt', back), 11);
    assert.deepEqual(treeOf(back), treeOf(src));
    // Into a directory that holds something already: the members are added and replace what they name.
    writeFileSync(join(back, 'empty'), 'stale');
    writeFileSync(join(back, 'mine'), 'kept');
    assert.equal(await sbx.files.downloadDir('/tmp/dir-rt', back), 11);
    assert.equal(readFileSync(join(back, 'empty'), 'utf8'), '');
    assert.equal(readFileSync(join(back, 'mine'), 'utf8'), 'kept');
    assert.ok(!readdirSync(back).some((name) => name.endsWith('.part')));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('files.uploadDir of a file is refused before any request; downloadDir refuses a link pointing out of the target', async () => {
  const work = mkdtempSync(join(tmpdir(), 'paddock-sdk-dir-'));
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.writeHead(500).end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  try {
    writeFileSync(join(work, 'file.txt'), 'not a directory');
    const { port } = server.address() as { port: number };
    const offline = new Filesystem(new PaddockClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'pdk_live_x' }), 'sbx_x');
    await assert.rejects(offline.uploadDir(join(work, 'file.txt')), (e) => e instanceof LocalArchiveError && e instanceof PaddockError && e.code === 'not_a_directory');
    await assert.rejects(offline.uploadDir(join(work, 'missing')), (e) => e instanceof LocalArchiveError && e.code === 'not_a_directory');
    assert.equal(requests, 0);
    await assert.rejects(sbx.files.uploadDir(join(work, 'file.txt'), '/tmp/nope'), (e) => e instanceof LocalArchiveError);
    assert.equal(await sbx.files.exists('/tmp/nope'), false);
    // The sandbox is the other side's: a link it holds to its /etc must not become one to ours.
    const made = await sbx.commands.run('mkdir -p /tmp/evil/d && echo fine > /tmp/evil/d/a.txt && ln -s /etc /tmp/evil/etc');
    assert.equal(made.exitCode, 0, made.stderr);
    const into = join(work, 'into');
    await assert.rejects(sbx.files.downloadDir('/tmp/evil', into), (e) => e instanceof LocalArchiveError && e.code === 'unsafe_member' && e.member === './etc');
    assert.ok(!readdirSync(into).includes('etc'), 'the link is not made');
    assert.deepEqual(readdirSync(work).sort(), ['file.txt', 'into']);
  } finally {
    server.close();
    rmSync(work, { recursive: true, force: true });
  }
});

/** The status of a request to a preview's host with no token, on loopback, as a stranger sends it. */
function statusWithoutToken(previewUrl: string, path = '/'): Promise<number> {
  const url = new URL(previewUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: url.port, path, headers: { host: url.host }, setHost: false, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits until the program behind the preview answers 200 (the proxy says 502 while nothing listens). */
function firstAnswer(preview: Preview, path = '/'): Promise<Response> {
  return eventually(`the program on port ${preview.port}`, 20_000, async () => {
    const res = await preview.fetch(path);
    if (res.status === 200) return res;
    await res.body?.cancel();
    return undefined;
  });
}

test('previews: a program served in the sandbox answers preview.fetch on *.localhost, and no one without the token; list, public, remove', async () => {
  const made = await sbx.commands.run('mkdir -p /tmp/site && echo served > /tmp/site/index.html && head -c 6291456 /dev/zero > /tmp/site/big.bin');
  assert.equal(made.exitCode, 0, made.stderr);
  await sbx.commands.run(['python3', '-m', 'http.server', '8000', '--bind', '127.0.0.1', '--directory', '/tmp/site'], { background: true });
  const preview = await sbx.previews.create(8000);
  assert.ok(preview instanceof Preview);
  assert.equal(preview.url, `http://8000-${sbx.id.slice(4)}.localhost:${new URL(api.url).port}/`);
  assert.equal(preview.public, false);
  assert.equal(preview.signedUrl, `${preview.url}?paddock_preview_token=${preview.token}`);
  // Node's own resolver knows no *.localhost here: only the SDK's loopback dialling reaches it.
  const res = await firstAnswer(preview);
  assert.equal(await res.text(), 'served\n');
  assert.match(res.headers.get('content-type') ?? '', /text\/html/);
  // A large answer streams whole through the Response made from the connection.
  const big = await preview.fetch('/big.bin?x=1');
  assert.equal(big.status, 200);
  assert.equal((await big.arrayBuffer()).byteLength, 6291456);
  assert.equal((await preview.fetch('/missing')).status, 404);
  await assert.rejects(preview.fetch('http://elsewhere.example/'), (e) => e instanceof PaddockError);
  assert.equal(await statusWithoutToken(preview.url), 401);

  const listed = await sbx.previews.list();
  assert.deepEqual(listed.map((p) => [p.port, p.url, p.public]), [[8000, preview.url, false]]);
  assert.ok(!JSON.stringify(listed).includes(preview.token), 'a list never shows a token');

  // The same port made public: a new token, and none needed.
  const open = await sbx.previews.create(8000, { public: true, expiresInSeconds: 600 });
  assert.equal(open.public, true);
  assert.notEqual(open.token, preview.token);
  assert.equal(await statusWithoutToken(open.url), 200);

  await sbx.previews.remove(8000);
  assert.equal((await preview.fetch('/')).status, 401);
  assert.equal(await statusWithoutToken(open.url), 401);
  assert.deepEqual(await sbx.previews.list(), []);
  await assert.rejects(sbx.previews.remove(8000), (e) => e instanceof PaddockApiError && e.code === 'preview_not_found' && e.status === 404);
});

test('preview.fetch sends a method, headers and a body as fetch would, and never the token to the program', async () => {
  await sbx.files.write('/tmp/program.py', readFileSync(new URL('../previews/program.py', import.meta.url), 'utf8'));
  await sbx.commands.run(['python3', '/tmp/program.py', '8001', '127.0.0.1'], { background: true });
  const preview = await sbx.previews.create(8001);
  const seen = (await (await firstAnswer(preview, '/echo?q=1')).json()) as { path: string; headers: Record<string, string> };
  assert.equal(seen.path, '/echo?q=1');
  assert.equal(seen.headers.host, new URL(preview.url).host);
  assert.equal(seen.headers['x-paddock-preview-token'], undefined);
  const custom = (await (await preview.fetch('/echo', { headers: { 'x-custom': 'kept' } })).json()) as { headers: Record<string, string> };
  assert.equal(custom.headers['x-custom'], 'kept');
  const posted = await preview.fetch('/count', { method: 'POST', body: new Uint8Array(1024 * 1024) });
  assert.deepEqual(await posted.json(), { received: 1024 * 1024 });
  assert.deepEqual(await (await preview.fetch('/count', { method: 'POST', body: 'twelve bytes' })).json(), { received: 12 });
  await sbx.previews.remove(8001);
});

test('preview.fetch: another host goes through fetch, a *.localhost one on loopback; both send the token and answer a redirect without following it', async () => {
  const seen: { host?: string; token?: string }[] = [];
  const server = createServer((req, res) => {
    seen.push({ host: req.headers.host, token: req.headers['x-paddock-preview-token'] as string | undefined });
    res.writeHead(302, { location: 'http://elsewhere.example/' }).end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  try {
    const { port } = server.address() as { port: number };
    const of = (url: string) => new Preview({ port: 8000, url, token: 'pvt_t', signedUrl: `${url}?paddock_preview_token=pvt_t`, public: false, expiresAt: '2030-01-01T00:00:00.000Z' });
    for (const host of [`127.0.0.1:${port}`, `8000-x.localhost:${port}`]) {
      const res = await of(`http://${host}/`).fetch('/a');
      assert.equal(res.status, 302, host);
      assert.equal(res.headers.get('location'), 'http://elsewhere.example/');
    }
    assert.deepEqual(seen, [
      { host: `127.0.0.1:${port}`, token: 'pvt_t' },
      { host: `8000-x.localhost:${port}`, token: 'pvt_t' },
    ]);
  } finally {
    server.close();
  }
});

test('snapshotOnDestroy: destroy() keeps the workspace first, and the destroyed sandbox names the snapshot a new one starts from', async () => {
  const client = new PaddockClient(conn);
  const kept = await Sandbox.create({ ...conn, snapshotOnDestroy: true });
  await kept.files.write('last.txt', 'at the end\n');
  assert.equal((await kept.info()).snapshotOnDestroy, true);
  await kept.destroy();
  const ended = await client.getSandbox(kept.id);
  assert.match(ended.finalSnapshotId ?? '', /^snap_/, JSON.stringify(ended));
  await using next = await Sandbox.create({ ...conn, snapshot: ended.finalSnapshotId! });
  assert.equal(await next.files.readText('last.txt'), 'at the end\n');
  await client.deleteSnapshot(ended.finalSnapshotId!);
});

test('snapshots: the workspace kept, a sandbox created from it sees it; listed through the client a page at a time, counted in the account, deleted, then not found', async () => {
  await sbx.files.write('kept/state.txt', 'before the snapshot\n');
  const snapshot = await sbx.snapshots.create({ name: 'sdk' });
  assert.deepEqual([snapshot.status, snapshot.name, snapshot.sandboxId, snapshot.failureCode], ['ready', 'sdk', sbx.id, null]);
  assert.match(snapshot.id, /^snap_/);
  assert.ok(snapshot.sizeBytes > 0 && snapshot.files >= 2, JSON.stringify(snapshot));
  assert.deepEqual((await sbx.snapshots.list()).map((s) => s.id), [snapshot.id]);
  const client = new PaddockClient(conn);
  await using forked = await Sandbox.create({ ...conn, snapshot: snapshot.id });
  assert.equal(await forked.files.readText('kept/state.txt'), 'before the snapshot\n');
  // The fork is a sandbox of its own: a snapshot of it is not one of sbx's.
  const ofFork = await forked.snapshots.create();
  assert.equal(ofFork.name, null);
  assert.deepEqual((await forked.snapshots.list()).map((s) => s.id), [ofFork.id]);
  const pending = await sbx.snapshots.create({ wait: false });
  assert.equal(pending.status, 'pending');
  await eventually('the snapshot is ready', 30_000, async () => ((await client.getSnapshot(pending.id)).status === 'ready' ? true : undefined));
  assert.deepEqual((await sbx.snapshots.list()).map((s) => s.id), [pending.id, snapshot.id], "sbx's own, newest first");

  // The account's, newest first: a page as a list, the page with its next, every page.
  const newestFirst = [pending.id, ofFork.id, snapshot.id];
  assert.deepEqual((await client.listSnapshots()).map((s) => s.id), newestFirst);
  assert.deepEqual((await client.listSnapshots({ limit: 1 })).map((s) => s.id), [pending.id]);
  const first = await client.snapshotPage({ limit: 2 });
  assert.deepEqual([first.data.map((s) => s.id), typeof first.next], [newestFirst.slice(0, 2), 'string']);
  assert.deepEqual((await client.listSnapshots({ limit: 2, after: first.next! })).map((s) => s.id), [snapshot.id]);
  assert.equal((await client.snapshotPage({ limit: 2, after: first.next! })).next, null);
  const listed: string[] = [];
  for await (const s of client.snapshots({ pageSize: 1 })) listed.push(s.id);
  assert.deepEqual(listed, newestFirst);
  const sizes = await Promise.all(newestFirst.map(async (id) => (await client.getSnapshot(id)).sizeBytes));
  const storage = (await client.account()).usage.snapshotStorage;
  assert.equal(storage.usedBytes, sizes.reduce((a, b) => a + b, 0));
  assert.ok(storage.limitBytes > storage.usedBytes, JSON.stringify(storage));

  for (const id of newestFirst) await client.deleteSnapshot(id);
  assert.deepEqual(await client.listSnapshots(), []);
  assert.equal((await client.account()).usage.snapshotStorage.usedBytes, 0);
  await assert.rejects(client.getSnapshot(snapshot.id), (err: unknown) => err instanceof PaddockApiError && err.code === 'snapshot_not_found' && err.status === 404);
  await assert.rejects(client.deleteSnapshot(snapshot.id), (err: unknown) => err instanceof PaddockApiError && err.code === 'snapshot_not_found' && err.status === 404);
  await assert.rejects(Sandbox.create({ ...conn, snapshot: snapshot.id }), (err: unknown) => err instanceof PaddockApiError && err.code === 'snapshot_not_found');
  // The forked sandbox keeps its workspace when the snapshot it came from is gone.
  assert.equal(await forked.files.readText('kept/state.txt'), 'before the snapshot\n');
});

test("snapshots of another account's sandbox, or of a sandbox that is no longer running, are refused with the API's codes", async () => {
  const other = new PaddockClient({ apiKey: (await newAccount(api.url, 'sdk-handle-snap-other')).key, baseUrl: api.url });
  await assert.rejects(other.createSnapshot(sbx.id), (err: unknown) => err instanceof PaddockApiError && err.code === 'sandbox_not_found' && err.status === 404);
  const gone = await Sandbox.create({ ...conn, timeout: 60 });
  await gone.destroy();
  await assert.rejects(gone.snapshots.create(), (err: unknown) => err instanceof PaddockApiError && err.code === 'sandbox_not_running' && err.status === 409);
});

test('setTimeout moves expiresAt; destroy ends it; await using destroys at the end of the block', async () => {
  const before = Date.parse((await sbx.info()).expiresAt);
  await sbx.setTimeout(120);
  const after = Date.parse((await sbx.info()).expiresAt);
  assert.ok(after < before && after <= Date.now() + 121_000, `${before} → ${after}`);
  let id: string;
  {
    await using scoped = await Sandbox.create(conn);
    id = scoped.id;
    assert.equal((await scoped.commands.run('true')).exitCode, 0);
  }
  const gone = await Sandbox.list({ ...conn, state: 'destroyed' });
  assert.ok(gone.some((s) => s.id === id), 'destroyed by await using');
  const temp = await Sandbox.create(conn);
  await temp.destroy();
  assert.equal((await temp.info()).state, 'destroyed');
  await sbx.destroy();
  await assert.rejects(sbx.commands.run('true'), (e) => e instanceof PaddockApiError && e.status === 409);
});

test("network: Sandbox.create({ network }) and setNetwork() set the sandbox's egress policy, as info() shows it; a rule that is not one is the API's refusal", async () => {
  await using open = await Sandbox.create({ ...conn, network: { egress: { allow: ['198.51.100.0/24:443'] } } });
  assert.deepEqual((await open.info()).network, { egress: { allow: ['198.51.100.0/24:443'] } });
  await open.setNetwork({ egress: 'none' });
  assert.deepEqual((await open.info()).network, { egress: 'none' });
  await assert.rejects(open.setNetwork({ egress: { allow: ['*.org'] } }), (err: unknown) => err instanceof PaddockApiError && err.code === 'invalid_request' && err.status === 400);
});
