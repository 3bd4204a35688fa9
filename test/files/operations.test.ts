import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { call, RawBody } from '../helpers/http.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { sandboxFor } from './helpers.ts';
import type { PaddockApiError} from '../../shared/sdk/index.ts';
import { PaddockClient } from '../../shared/sdk/index.ts';

// Remove, move, mkdir, stat and the raw bytes both ways, through HTTP on a real sandbox: what each
// does, the errors each answers, and that every path stays inside the sandbox.

const stack = await startSandboxStack();
const account = await newAccount(stack.url);
const box = await sandboxFor(stack, account.key);

const q = (query: Record<string, string>) => new URLSearchParams(query).toString();
const url = (sub: string, query: Record<string, string>) => `/v1/sandboxes/${box.id}/files${sub}?${q(query)}`;
const remove = (path: string, recursive?: boolean) => box.files('DELETE', '', { path, ...(recursive ? { recursive: 'true' } : {}) });
const move = (from: string, to: string, overwrite?: boolean) => call(stack.url, 'POST', url('/move', {}), { token: account.key, body: { from, to, ...(overwrite ? { overwrite } : {}) } });
const mkdir = (path: string) => box.files('POST', '/mkdir', { path });
const stat = (path: string) => box.files('GET', '/stat', { path });
const exists = async (path: string) => (await box.sh(`test -e '${path}' || test -L '${path}'; echo $?`)).stdout.trim() === '0';

async function readRaw(path: string, range?: string): Promise<{ status: number; headers: Headers; bytes: Buffer; body: any }> {
  const res = await fetch(new URL(url('/raw', { path }), stack.url), {
    headers: { authorization: `Bearer ${account.key}`, ...(range ? { range } : {}) },
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  const body = /json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(bytes.toString()) : bytes;
  return { status: res.status, headers: res.headers, bytes, body };
}

const putRaw = (path: string, bytes: Buffer, contentType = 'application/octet-stream') =>
  call(stack.url, 'PUT', url('/raw', { path }), { token: account.key, body: new RawBody(bytes, contentType) });

const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

test('remove: a file, a symlink (not its target), an empty directory; a full one only with recursive', async () => {
  await box.sh('mkdir -p /workspace/rm/full/sub /workspace/rm/empty && echo x > /workspace/rm/full/sub/f && echo t > /workspace/rm/target && ln -s target /workspace/rm/link && echo y > /workspace/rm/file');
  assert.equal((await remove('rm/file')).status, 204);
  assert.equal(await exists('/workspace/rm/file'), false);
  assert.equal((await remove('rm/link')).status, 204);
  assert.equal(await exists('/workspace/rm/link'), false);
  assert.equal((await box.sh('cat /workspace/rm/target')).stdout, 't\n', 'the target stays');
  assert.equal((await remove('rm/empty')).status, 204);
  assertProblem(await remove('rm/full'), 409, 'directory_not_empty');
  assert.equal(await exists('/workspace/rm/full/sub/f'), true);
  const res = await remove('rm/full', true);
  assert.equal(res.status, 204);
  assert.equal(res.body, '');
  assert.equal(await exists('/workspace/rm/full'), false);
  assertProblem(await remove('rm/missing'), 404, 'file_not_found');
  assertProblem(await remove('rm/target/below'), 409, 'not_a_directory');
  assertProblem(await remove('/etc/passwd'), 403, 'permission_denied');
  assertProblem(await remove('/usr/bin', true), 403, 'permission_denied');
  // A directory that cannot itself go is not emptied first.
  await box.sh('echo stays > /workspace/rm/stays');
  assertProblem(await remove('/workspace', true), 403, 'permission_denied');
  assertProblem(await remove('/tmp', true), 403, 'permission_denied');
  assert.equal((await box.sh('cat /workspace/rm/stays')).stdout, 'stays\n');
});

test('move: renames to the name given, makes its parents, refuses an existing one unless overwrite', async () => {
  await box.sh('mkdir -p /workspace/mv/dir/in && echo a > /workspace/mv/a && echo b > /workspace/mv/b && ln -s a /workspace/mv/link');
  const moved = await move('mv/a', 'mv/new/deep/a2');
  assert.equal(moved.status, 200, JSON.stringify(moved.body));
  assert.deepEqual(moved.body, { path: '/workspace/mv/new/deep/a2' });
  assert.equal((await box.sh('cat /workspace/mv/new/deep/a2')).stdout, 'a\n');
  assert.equal(await exists('/workspace/mv/a'), false);

  const refused = await move('mv/b', 'mv/new/deep/a2');
  assertProblem(refused, 409, 'file_exists');
  assert.match(refused.body.detail, /overwrite/);
  assert.equal((await box.sh('cat /workspace/mv/new/deep/a2 /workspace/mv/b')).stdout, 'a\nb\n', 'neither touched');
  assert.equal((await move('mv/b', 'mv/new/deep/a2', true)).status, 200);
  assert.equal((await box.sh('cat /workspace/mv/new/deep/a2')).stdout, 'b\n');

  // The name itself, never "into" an existing directory.
  assertProblem(await move('mv/new/deep/a2', 'mv/dir'), 409, 'file_exists');
  assertProblem(await move('mv/new/deep/a2', 'mv/dir', true), 409, 'is_a_directory');
  assertProblem(await move('mv/dir', 'mv/dir/in/self'), 400, 'invalid_request');
  const missing = await move('mv/nope', 'mv/x');
  assertProblem(missing, 404, 'file_not_found');
  assert.match(missing.body.detail, /mv\/nope/);

  // A symlink moves as itself.
  assert.equal((await move('mv/link', 'mv/link2')).status, 200);
  assert.equal((await box.sh('readlink /workspace/mv/link2')).stdout, 'a\n');
  // Onto itself, by any spelling: it stays, a success.
  assert.equal((await move('mv/link2', '/workspace/mv/../mv/link2')).status, 200);
  assert.equal((await box.sh('readlink /workspace/mv/link2')).stdout, 'a\n');
  assertProblem(await call(stack.url, 'POST', url('/move', {}), { token: account.key, body: { from: 'mv/b' } }), 400, 'invalid_request');
  // What cannot leave its place is neither copied away nor emptied.
  assertProblem(await move('/workspace', '/tmp/ws'), 403, 'permission_denied');
  assertProblem(await move('/tmp', '/workspace/tmp-moved'), 403, 'permission_denied');
  assert.equal((await box.sh('cat /workspace/mv/new/deep/a2; test -e /tmp/ws; echo $?')).stdout, 'b\n1\n');
});

test('mkdir makes parents and answers 201 for a directory that exists; a file in the way is 409', async () => {
  const made = await mkdir('mk/a/b/c');
  assert.equal(made.status, 201, JSON.stringify(made.body));
  assert.deepEqual(made.body, { path: '/workspace/mk/a/b/c' });
  assert.equal((await box.sh('test -d /workspace/mk/a/b/c && echo yes')).stdout, 'yes\n');
  assert.equal((await mkdir('mk/a/b/c')).status, 201);
  await box.sh('echo x > /workspace/mk/file');
  assertProblem(await mkdir('mk/file'), 409, 'file_exists');
  assertProblem(await mkdir('mk/file/sub'), 409, 'not_a_directory');
  assertProblem(await mkdir('/etc/made'), 403, 'permission_denied');
});

test('stat describes a file, a directory and a symlink (not followed)', async () => {
  await box.sh('mkdir -p /workspace/st && printf 12345 > /workspace/st/f && chmod 640 /workspace/st/f && ln -s /etc/passwd /workspace/st/l && touch -d 2024-01-02T03:04:05Z /workspace/st/f');
  const file = await stat('st/f');
  assert.equal(file.status, 200, JSON.stringify(file.body));
  assert.deepEqual(file.body, { path: '/workspace/st/f', type: 'file', size: 5, mode: '0640', modifiedAt: '2024-01-02T03:04:05.000Z' });
  const dir = await stat('st');
  assert.equal(dir.body.type, 'dir');
  assert.equal(dir.body.target, undefined);
  const link = await stat('st/l');
  assert.equal(link.body.type, 'symlink');
  assert.equal(link.body.target, '/etc/passwd');
  assert.equal(link.body.size, '/etc/passwd'.length);
  assertProblem(await stat('st/nope'), 404, 'file_not_found');
  assertProblem(await stat('st/f/below'), 409, 'not_a_directory');
});

test('raw: a file\'s bytes as they are, whole or one range; ranges outside it answer 416', async () => {
  const put = await putRaw('raw/all.bin', ALL_BYTES);
  assert.equal(put.status, 201, JSON.stringify(put.body));
  assert.deepEqual(put.body, { path: '/workspace/raw/all.bin', size: 256, overwritten: false });
  assert.equal((await box.sh('base64 -w0 /workspace/raw/all.bin')).stdout, ALL_BYTES.toString('base64'));

  const whole = await readRaw('raw/all.bin');
  assert.equal(whole.status, 200);
  assert.equal(whole.headers.get('content-type'), 'application/octet-stream');
  assert.equal(whole.headers.get('accept-ranges'), 'bytes');
  assert.equal(whole.headers.get('content-length'), '256');
  assert.deepEqual(whole.bytes, ALL_BYTES);

  const cases: [string, number, number][] = [
    ['bytes=0-9', 0, 9],
    ['bytes=250-', 250, 255],
    ['bytes=-10', 246, 255],
    ['bytes=255-255', 255, 255],
    ['bytes=10-99999', 10, 255],
    ['bytes=-1000', 0, 255],
  ];
  for (const [range, start, end] of cases) {
    const res = await readRaw('raw/all.bin', range);
    assert.equal(res.status, 206, range);
    assert.equal(res.headers.get('content-range'), `bytes ${start}-${end}/256`, range);
    assert.deepEqual(res.bytes, ALL_BYTES.subarray(start, end + 1), range);
  }
  for (const range of ['bytes=256-', 'bytes=99999999999999999999-', 'bytes=-0']) {
    const res = await readRaw('raw/all.bin', range);
    assertProblem({ ...res, body: res.body }, 416, 'range_not_satisfiable');
    assert.equal(res.headers.get('content-range'), 'bytes */256', range);
  }
  // Not one satisfiable single range: the whole file, as RFC 9110 allows.
  for (const range of ['bytes=5-2', 'bytes=0-1,5-6', 'items=0-1', 'bytes=x-']) {
    const res = await readRaw('raw/all.bin', range);
    assert.equal(res.status, 200, range);
    assert.deepEqual(res.bytes, ALL_BYTES, range);
  }

  assert.equal((await putRaw('raw/empty', Buffer.alloc(0))).status, 201);
  const empty = await readRaw('raw/empty');
  assert.equal(empty.status, 200);
  assert.equal(empty.bytes.length, 0);
  assert.equal((await readRaw('raw/empty', 'bytes=0-')).status, 416);

  const dir = await readRaw('raw');
  assertProblem(dir, 409, 'is_a_directory');
  assertProblem(await readRaw('raw/missing'), 404, 'file_not_found');

  // Any media type, or none; overwrite=false refuses an existing file.
  const again = await putRaw('raw/all.bin', Buffer.from('text'), 'text/plain');
  assert.deepEqual(again.body, { path: '/workspace/raw/all.bin', size: 4, overwritten: true });
  const bare = await rawRequest(stack.url, 'PUT', url('/raw', { path: 'raw/bare' }), { headers: { authorization: `Bearer ${account.key}` }, body: 'bare' });
  assert.equal(bare.status, 201, JSON.stringify(bare.body));
  assertProblem(await call(stack.url, 'PUT', url('/raw', { path: 'raw/bare', overwrite: 'false' }), { token: account.key, body: new RawBody(Buffer.from('x'), 'application/octet-stream') }), 409, 'file_exists');
  assertProblem(await putRaw('raw', Buffer.from('x')), 409, 'is_a_directory');
  assertProblem(await putRaw('/etc/raw', Buffer.from('x')), 403, 'permission_denied');
});

test('raw: a large body streams both ways, chunked, and a slow client is served to the end', async () => {
  const size = 6 * 1024 * 1024 + 7;
  const big = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4096) big.writeUInt32BE(i, i);
  const chunked = await rawRequest(stack.url, 'PUT', url('/raw', { path: 'raw/big.bin' }), {
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/octet-stream' },
    body: big,
    chunked: true,
  });
  assert.equal(chunked.status, 201, JSON.stringify(chunked.body));
  assert.equal(chunked.body.size, size);
  const back = await readRaw('raw/big.bin');
  assert.equal(back.bytes.length, size);
  assert.ok(back.bytes.equals(big), 'the same bytes');
  const tail = await readRaw('raw/big.bin', `bytes=${size - 100000}-`);
  assert.ok(tail.bytes.equals(big.subarray(size - 100000)));

  // A client that sends in small pieces, with pauses between them.
  const pieces = ['slow ', 'and ', 'steady'];
  const slow = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(new URL(url('/raw', { path: 'raw/slow.txt' }), stack.url), {
      method: 'PUT',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    let i = 0;
    const next = () => {
      if (i === pieces.length) return req.end();
      req.write(pieces[i++]);
      setTimeout(next, 300);
    };
    next();
  });
  assert.equal(slow.status, 201, slow.body);
  assert.equal((await box.sh('cat /workspace/raw/slow.txt')).stdout, 'slow and steady');
});

test('raw: a body cut short leaves the file as it was, and nothing else behind', async () => {
  await box.sh('mkdir -p /workspace/cut && echo before > /workspace/cut/f');
  const sent = new Promise<void>((resolve) => {
    const req = request(new URL(url('/raw', { path: 'cut/f' }), stack.url), {
      method: 'PUT',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/octet-stream', 'content-length': String(4 * 1024 * 1024) },
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.write(Buffer.alloc(1024 * 1024, 7), () => setTimeout(() => req.destroy(), 200));
  });
  await sent;
  // The API removes the temporary file once the sandbox's write has stopped: wait for that.
  let left = '';
  for (let i = 0; i < 50; i++) {
    left = (await box.sh('ls -A /workspace/cut')).stdout;
    if (left === 'f\n') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(left, 'f\n', 'no temporary file is left');
  assert.equal((await box.sh('cat /workspace/cut/f')).stdout, 'before\n');
});

test('every path stays in the sandbox: symlinks out, .., /proc/…/root and absolute paths', async () => {
  const marker = `paddock-ops-escape-${process.pid}-${Date.now()}`;
  await box.sh(`mkdir -p /workspace/esc && ln -s / /workspace/esc/root && ln -s /work /workspace/esc/hostwork && ln -s /tmp/${marker} /workspace/esc/out && echo mine > /workspace/esc/mine`);
  // The link itself is described and removed; what it points at is the sandbox's.
  const link = await stat('esc/hostwork');
  assert.deepEqual([link.body.type, link.body.target], ['symlink', '/work']);
  // The link dangles in the sandbox, which has no /work.
  assertProblem(await stat('esc/hostwork/h-files'), 409, 'not_a_directory');
  // The sandbox user may not follow its init's root at all; its own root is the sandbox's.
  assert.ok([403, 404, 409].includes((await stat('/proc/1/root/work')).status));
  assertProblem(await stat('/proc/self/root/work'), 404, 'file_not_found');
  assertProblem(await readRaw('esc/root/etc/shadow'), 404, 'file_not_found');
  const passwd = await readRaw('../../etc/passwd');
  assert.equal(passwd.status, 200);
  assert.match(passwd.bytes.toString(), /^sandbox:x:1000:1000:/m);
  assert.notEqual(passwd.bytes.toString(), readFileSync('/etc/passwd', 'utf8'));
  const viaProc = await readRaw('/proc/1/root/etc/passwd');
  if (viaProc.status === 200) assert.match(viaProc.bytes.toString(), /^sandbox:x:1000:1000:/m);
  else assert.ok([403, 404, 409].includes(viaProc.status), String(viaProc.status));

  assertProblem(await remove('esc/root/etc/passwd'), 403, 'permission_denied');
  assertProblem(await remove('esc/root/usr/bin', true), 403, 'permission_denied');
  assertProblem(await move('esc/mine', 'esc/root/etc/mine'), 403, 'permission_denied');
  assertProblem(await move('esc/mine', '../../../etc/mine'), 403, 'permission_denied');
  assertProblem(await move('/etc/passwd', 'esc/stolen'), 403, 'permission_denied');
  assertProblem(await mkdir('esc/root/opt/x'), 403, 'permission_denied');
  assertProblem(await putRaw('esc/root/etc/raw', Buffer.from('x')), 403, 'permission_denied');

  // Writing or moving through a link to a host path lands in the sandbox (its /tmp), never on the host.
  assert.equal((await putRaw('esc/out', Buffer.from('inside'))).status, 201);
  assert.equal((await box.sh(`cat /tmp/${marker}`)).stdout, 'inside');
  assert.throws(() => readFileSync(`/tmp/${marker}`), /ENOENT/);
  assert.equal((await move('esc/mine', `/tmp/${marker}-moved`)).status, 200);
  assert.equal((await box.sh(`cat /tmp/${marker}-moved`)).stdout, 'mine\n');
  assert.throws(() => readFileSync(`/tmp/${marker}-moved`), /ENOENT/);

  assert.equal((await remove('esc/hostwork')).status, 204);
  assert.equal((await remove('esc/root')).status, 204, 'the link, not /');
  assert.equal((await box.sh('test -d /etc && test -d /workspace/esc && echo ok')).stdout, 'ok\n');
  // Paths with NUL bytes are refused before they reach the sandbox.
  assertProblem(await stat('a\0b'), 400, 'invalid_request');
});

test("another account's sandbox, or an unknown id, answers 404 on every new file route", async () => {
  const other = await newAccount(stack.url);
  await box.sh('echo keep > /workspace/keep.txt');
  const routes: [string, string, string, unknown?][] = [
    ['DELETE', '', 'path=keep.txt&recursive=true'],
    ['POST', '/move', '', { from: 'keep.txt', to: 'taken.txt', overwrite: true }],
    ['POST', '/mkdir', 'path=made-by-other'],
    ['GET', '/stat', 'path=keep.txt'],
    ['GET', '/raw', 'path=keep.txt'],
    ['PUT', '/raw', 'path=keep.txt', new RawBody(Buffer.from('theirs'), 'application/octet-stream')],
  ];
  for (const [method, sub, query, body] of routes) {
    for (const id of [box.id, `sbx_${'0'.repeat(24)}`]) {
      const res = await call(stack.url, method, `/v1/sandboxes/${id}/files${sub}?${query}`, { token: other.key, ...(body !== undefined ? { body } : {}) });
      assertProblem(res, 404, 'sandbox_not_found');
    }
  }
  assert.equal((await box.sh('cat /workspace/keep.txt; test -e /workspace/made-by-other; echo $?')).stdout, 'keep\n1\n');
});

test('the SDK: removePath, movePath, makeDir, statPath, and readRaw and writeRaw streamed', async () => {
  const client = new PaddockClient({ baseUrl: stack.url, apiKey: account.key });
  assert.deepEqual(await client.makeDir(box.id, 'sdk/in'), { path: '/workspace/sdk/in' });
  async function* pieces() {
    for (let i = 0; i < 4; i++) yield new Uint8Array(Buffer.from(`piece ${i}\n`));
  }
  assert.deepEqual(await client.writeRaw(box.id, 'sdk/in/a.txt', pieces()), { path: '/workspace/sdk/in/a.txt', size: 32, overwritten: false });
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array(ALL_BYTES));
      controller.close();
    },
  });
  assert.equal((await client.writeRaw(box.id, 'sdk/all.bin', readable)).size, 256);
  assert.equal((await client.writeRaw(box.id, 'sdk/text.txt', 'héllo')).size, 6);
  const read = async (stream: ReadableStream<Uint8Array>) => {
    const chunks: Uint8Array[] = [];
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
    return Buffer.concat(chunks);
  };
  assert.deepEqual(await read(await client.readRaw(box.id, 'sdk/all.bin')), ALL_BYTES);
  assert.deepEqual(await read(await client.readRaw(box.id, 'sdk/all.bin', { start: 10, end: 19 })), ALL_BYTES.subarray(10, 20));
  assert.deepEqual(await read(await client.readRaw(box.id, 'sdk/all.bin', { start: 250 })), ALL_BYTES.subarray(250));
  await assert.rejects(client.readRaw(box.id, 'sdk/all.bin', { start: 256 }), (err: PaddockApiError) => err.code === 'range_not_satisfiable' && err.status === 416);

  assert.deepEqual(await client.movePath(box.id, { from: 'sdk/in/a.txt', to: 'sdk/b.txt' }), { path: '/workspace/sdk/b.txt' });
  await assert.rejects(client.movePath(box.id, { from: 'sdk/text.txt', to: 'sdk/b.txt' }), (err: PaddockApiError) => err.code === 'file_exists');
  const st = await client.statPath(box.id, 'sdk/b.txt');
  assert.equal(st.type, 'file');
  assert.equal(st.size, 32);
  await assert.rejects(client.removePath(box.id, 'sdk'), (err: PaddockApiError) => err.code === 'directory_not_empty');
  assert.equal(await client.removePath(box.id, 'sdk', { recursive: true }), undefined);
  await assert.rejects(client.statPath(box.id, 'sdk'), (err: PaddockApiError) => err.code === 'file_not_found');
});
