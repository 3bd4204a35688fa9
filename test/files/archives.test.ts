import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { gzipSync, gunzipSync } from 'node:zlib';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { sandboxFor, type FileClient } from './helpers.ts';
import { tarOf, type TarMember } from './tar-writer.ts';

// Archives (docs/api.md, "Archives"): whole directories in and out as tar or tar.gz, extracted inside
// the sandbox. Run once per runtime (PADDOCK_TEST_RUNTIME).

const LIMIT = 8 * 1024 * 1024;
const DISK_MB = 64;
const stack = await startSandboxStack({
  overrides: { PADDOCK_ARCHIVE_MAX_BYTES: String(LIMIT), PADDOCK_LOCAL_DISK_MB: String(DISK_MB), PADDOCK_LOCAL_DISK_INODES: '8192' },
});
const account = await newAccount(stack.url, 'archives');
const box = await sandboxFor(stack, account.key);

function upload(client: FileClient, path: string, body: Buffer, options: { type?: string; chunked?: boolean; key?: string } = {}) {
  return rawRequest(stack.url, 'PUT', `/v1/sandboxes/${client.id}/files/archive?${new URLSearchParams({ path })}`, {
    headers: { authorization: `Bearer ${options.key ?? client.key}`, 'content-type': options.type ?? 'application/x-tar' },
    body,
    chunked: options.chunked,
  });
}

async function download(client: FileClient, path: string, accept?: string, key = client.key) {
  const res = await fetch(`${stack.url}/v1/sandboxes/${client.id}/files/archive?${new URLSearchParams({ path })}`, {
    headers: { authorization: `Bearer ${key}`, ...(accept ? { accept } : {}) },
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, bytes, json: () => JSON.parse(bytes.toString()) };
}

/** `tar -t` of the archive on the host: the member names. */
function members(archive: Buffer): string[] {
  const listed = spawnSync('tar', ['-t', '-f', '-'], { input: archive });
  assert.equal(listed.status, 0, listed.stderr.toString());
  return listed.stdout.toString().split('\n').filter(Boolean).sort();
}

/** A tree with what a project holds: nested and empty directories, a symlink, binary data, unicode names, modes. */
function makeTree(): string {
  const root = mkdtempSync(join(tmpdir(), 'paddock-archive-tree-'));
  mkdirSync(join(root, 'src/deep/deeper'), { recursive: true });
  mkdirSync(join(root, 'empty'));
  writeFileSync(join(root, 'src/deep/deeper/notes.txt'), 'nested\n');
  writeFileSync(join(root, 'bin.dat'), Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256)));
  writeFileSync(join(root, 'héllo 日本 🦊.txt'), 'unicode\n');
  writeFileSync(join(root, 'run.sh'), '#!/bin/sh\necho run\n');
  chmodSync(join(root, 'run.sh'), 0o755);
  writeFileSync(join(root, 'private.key'), 'k\n');
  chmodSync(join(root, 'private.key'), 0o600);
  symlinkSync('src/deep/deeper/notes.txt', join(root, 'link-to-notes'));
  return root;
}

function hostTar(dir: string, gzip = false): Buffer {
  const made = spawnSync('tar', ['-c', '-f', '-', ...(gzip ? ['-z'] : []), '-C', dir, '.'], { maxBuffer: 64 * 1024 * 1024 });
  assert.equal(made.status, 0, made.stderr.toString());
  return made.stdout;
}

test('a tree round-trips: nested and empty directories, symlinks, binary data, unicode names and modes', async () => {
  const tree = makeTree();
  const archive = hostTar(tree);
  const up = await upload(box, 'project', archive);
  assert.equal(up.status, 201, JSON.stringify(up.body));
  assert.deepEqual(up.body, { path: '/workspace/project', files: members(archive).length, bytes: archive.length });

  const inside = await box.sh(
    'cd /workspace/project && sha256sum bin.dat && cat "héllo 日本 🦊.txt" && readlink link-to-notes && ' +
      'stat -c "%a %n" run.sh private.key empty src/deep && [ -d empty ] && ./run.sh',
  );
  assert.equal(inside.exitCode, 0, inside.stderr);
  const sha = spawnSync('sha256sum', ['bin.dat'], { cwd: tree }).stdout.toString();
  assert.equal(inside.stdout, `${sha}unicode\nsrc/deep/deeper/notes.txt\n755 run.sh\n600 private.key\n755 empty\n755 src/deep\nrun\n`);

  const down = await download(box, 'project');
  assert.equal(down.status, 200);
  assert.equal(down.headers.get('content-type'), 'application/x-tar');
  assert.match(down.headers.get('content-disposition') ?? '', /attachment; filename="project.tar"/);
  assert.deepEqual(members(down.bytes), members(archive));
  const back = mkdtempSync(join(tmpdir(), 'paddock-archive-back-'));
  assert.equal(spawnSync('tar', ['-x', '-f', '-', '-C', back], { input: down.bytes }).status, 0);
  assert.deepEqual(readFileSync(join(back, 'bin.dat')), readFileSync(join(tree, 'bin.dat')));
  assert.equal(readFileSync(join(back, 'héllo 日本 🦊.txt'), 'utf8'), 'unicode\n');
  assert.equal(readlinkSync(join(back, 'link-to-notes')), 'src/deep/deeper/notes.txt');
  assert.equal(lstatSync(join(back, 'run.sh')).mode & 0o777, 0o755);
  assert.equal(lstatSync(join(back, 'private.key')).mode & 0o777, 0o600);
  assert.ok(lstatSync(join(back, 'empty')).isDirectory());
});

test('gzip both ways: a tar.gz upload, and Accept: application/gzip for a download', async () => {
  const tree = makeTree();
  const up = await upload(box, '/workspace/zipped', hostTar(tree, true), { type: 'application/gzip' });
  assert.equal(up.status, 201, JSON.stringify(up.body));
  const down = await download(box, '/workspace/zipped', 'application/gzip');
  assert.equal(down.status, 200);
  assert.equal(down.headers.get('content-type'), 'application/gzip');
  assert.match(down.headers.get('content-disposition') ?? '', /zipped\.tar\.gz/);
  assert.deepEqual(members(gunzipSync(down.bytes)), members(hostTar(tree)));
  // A download of a file is an archive of that one file; a missing path is a 404.
  const one = await download(box, '/workspace/zipped/run.sh');
  assert.deepEqual(members(one.bytes), ['run.sh']);
  const missing = await download(box, '/workspace/no-such-dir');
  assert.equal(missing.status, 404);
  assert.equal(missing.json().code, 'file_not_found');
});

test('an upload into an existing file, or with a body that is not an archive media type, is refused', async () => {
  await box.put('plain.txt', { content: 'x' });
  const onFile = await upload(box, 'plain.txt', tarOf([{ name: 'a.txt', data: 'a' }]));
  assertProblem(onFile, 409, 'not_a_directory');
  const json = await upload(box, 'dir', Buffer.from('{}'), { type: 'application/json' });
  assertProblem(json, 415, 'unsupported_media_type');
  const garbage = await upload(box, 'garbage', Buffer.from('this is not a tar archive at all'.repeat(40)));
  assertProblem(garbage, 422, 'invalid_archive');
  const notGzip = await upload(box, 'garbage', tarOf([{ name: 'a.txt', data: 'a' }]), { type: 'application/gzip' });
  assertProblem(notGzip, 422, 'invalid_archive');
  // Neither failed upload left the directory it would have made.
  assert.equal((await box.sh('[ -e /workspace/garbage ] && echo there || echo gone')).stdout, 'gone\n');
});

test('hostile archives extract nothing outside the target, and answer invalid_archive', async () => {
  await box.sh('mkdir -p /workspace/existing && echo secret > /workspace/secret.txt');
  const cases: [string, TarMember[]][] = [
    ['dot-dot', [{ name: 'ok.txt', data: 'ok' }, { name: '../escaped-dotdot.txt', data: 'x' }]],
    ['absolute', [{ name: '/workspace/escaped-absolute.txt', data: 'x' }]],
    ['symlink out, then written through', [{ name: 'evil', type: 'symlink', linkname: '/workspace' }, { name: 'evil/escaped-symlink.txt', data: 'x' }]],
    ['symlink to /, then written through', [{ name: 'root', type: 'symlink', linkname: '/' }, { name: 'root/tmp/escaped-root.txt', data: 'x' }]],
    ['relative symlink up', [{ name: 'up', type: 'symlink', linkname: '../..' }, { name: 'up/escaped-up.txt', data: 'x' }]],
    ['hard link to a file outside', [{ name: 'hard', type: 'hardlink', linkname: '/workspace/secret.txt' }]],
    ['hard link up', [{ name: 'hard', type: 'hardlink', linkname: '../secret.txt' }]],
    ['device node', [{ name: 'null', type: 'chardev' }]],
  ];
  for (const [label, archive] of cases) {
    for (const target of ['hostile/new', 'existing']) {
      const res = await upload(box, target, tarOf(archive));
      assert.equal(res.status, 422, `${label} into ${target}: ${res.status} ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, 'invalid_archive', label);
    }
  }
  const outside = await box.sh(
    'ls /workspace/escaped-* /workspace/hostile/escaped-* /tmp/escaped-* 2>/dev/null; stat -c %h /workspace/secret.txt; ' +
      '[ -e /workspace/hostile/new ] && echo new-left-behind; find /workspace/existing -type c -o -type b',
  );
  assert.equal(outside.stdout, '1\n', outside.stdout);
});

test('past PADDOCK_ARCHIVE_MAX_BYTES: 413, nothing half-claimed, and the next upload works', async () => {
  const big = tarOf([{ name: 'big.bin', data: Buffer.alloc(LIMIT + 1024 * 1024, 7) }]);
  // Counted as it streams (no length declared), and refused by its declared length before a byte is read.
  const streamed = await upload(box, 'too-big', big, { chunked: true });
  assertProblem(streamed, 413, 'payload_too_large');
  assert.equal(streamed.body.limitBytes, LIMIT);
  const declared = await upload(box, 'too-big', big);
  assertProblem(declared, 413, 'payload_too_large');
  assert.equal((await box.sh('[ -e /workspace/too-big ] && echo there || echo gone')).stdout, 'gone\n');
  const next = await upload(box, 'fits', tarOf([{ name: 'small.txt', data: 'small' }]));
  assert.equal(next.status, 201, JSON.stringify(next.body));
  assert.deepEqual(next.body, { path: '/workspace/fits', files: 1, bytes: 2048 });
});

test('a gzip bomb fills the sandbox disk, not the host: 507 insufficient_storage, and the sandbox goes on', async () => {
  // 256 MiB of zeros, a few hundred KiB compressed: past the sandbox's disk once extracted.
  const zeros = Buffer.alloc(16 * 1024 * 1024);
  const bomb = gzipSync(tarOf(Array.from({ length: 16 }, (_, i) => ({ name: `zeros-${i}.bin`, data: zeros }))));
  assert.ok(bomb.length < LIMIT);
  const res = await upload(box, 'bomb', bomb, { type: 'application/gzip' });
  assertProblem(res, 507, 'insufficient_storage');
  assert.equal((await box.sh('[ -e /workspace/bomb ] && echo there || echo gone')).stdout, 'gone\n');
  const after = await upload(box, 'after-bomb', tarOf([{ name: 'a.txt', data: 'a' }]));
  assert.equal(after.status, 201, JSON.stringify(after.body));
});

test('another account’s sandbox answers 404 both ways, without its body being read', async () => {
  const other = await newAccount(stack.url, 'archives-other');
  const theirs = { ...box, key: other.key };
  assertProblem(await upload(theirs, 'x', tarOf([{ name: 'planted.txt', data: 'x' }])), 404, 'sandbox_not_found');
  const down = await download(theirs, '/workspace');
  assert.equal(down.status, 404);
  assert.equal(down.json().code, 'sandbox_not_found');
  assert.equal((await box.sh('[ -e /workspace/x ] && echo there || echo gone')).stdout, 'gone\n');
});

test('scopes: an upload needs files:write, a download files:read', async () => {
  const key = async (scopes: string[]) => {
    const res = await call(stack.url, 'POST', '/v1/api-keys', { token: account.token, body: { name: 'archive-scope', scopes } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.key as string;
  };
  const reader = await key(['files:read']);
  const writer = await key(['files:write']);
  const refused = await upload(box, 'scoped', tarOf([{ name: 'a.txt', data: 'a' }]), { key: reader });
  assertProblem(refused, 403, 'insufficient_scope');
  assert.equal((await download(box, '/workspace/fits', undefined, reader)).status, 200);
  assert.equal((await upload(box, 'scoped', tarOf([{ name: 'a.txt', data: 'a' }]), { key: writer })).status, 201);
  const down = await download(box, '/workspace/fits', undefined, writer);
  assert.equal(down.status, 403);
  assert.equal(down.json().code, 'insufficient_scope');
});

test('an upload still extracting at PADDOCK_ARCHIVE_TIMEOUT_SECONDS answers 504 operation_timed_out, and the sandbox goes on', async () => {
  // The archive's own timeout, not the exec maximum (set far below it here, and not reached).
  const slow = await startSandboxStack({ overrides: { PADDOCK_ARCHIVE_TIMEOUT_SECONDS: '1', PADDOCK_EXEC_TIMEOUT_MAX_SECONDS: '60' } });
  const owner = await newAccount(slow.url, 'archive-timeout');
  const client = await sandboxFor(slow, owner.key);
  const archive = tarOf([{ name: 'trickled.bin', data: Buffer.alloc(64 * 1024, 1) }]);
  const started = Date.now();
  const answer = await new Promise<{ status: number; headers: Headers; body: any }>((resolve, reject) => {
    const req = request(`${slow.url}/v1/sandboxes/${client.id}/files/archive?path=trickle`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/x-tar', 'transfer-encoding': 'chunked' },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: new Headers(res.headers as Record<string, string>), body: JSON.parse(text) }));
    });
    req.on('error', reject);
    // The header and a first block, then nothing more: the extraction waits for the rest.
    req.write(archive.subarray(0, 1024));
  });
  assertProblem(answer, 504, 'operation_timed_out');
  assert.ok(Date.now() - started < 15_000, `answered after ${Date.now() - started} ms`);
  assert.equal((await client.sh('echo alive')).stdout, 'alive\n');
});
