import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { sandboxFor } from './helpers.ts';
import { tarOf } from './tar-writer.ts';

// What the sandbox's file system refuses is the path's doing, not the service's: a full disk
// answers 507 insufficient_storage on every write route, and a file the kernel will not read (a
// /proc file that answers EIO) 409 file_io_error; neither is a 500. Run once per runtime.

const stack = await startSandboxStack({ overrides: { PADDOCK_LOCAL_DISK_MB: '16', PADDOCK_LOCAL_DISK_INODES: '4096' } });
const account = await newAccount(stack.url, 'file-failures');

test('a full disk answers 507 insufficient_storage to create, edit, archive and raw uploads, and writes work again once there is room', async () => {
  const box = await sandboxFor(stack, account.key);
  assert.equal((await box.put('/workspace/notes.txt', { content: 'a a a\n' })).status, 201);
  // The last blocks go to small writes: a big one stops short of them.
  const filled = await box.sh('for i in 1 2 3 4; do cat /dev/zero > /workspace/fill$i 2>/dev/null; done; df -P /workspace | tail -n 1');
  assert.match(filled.stdout, /\s100%/, filled.stdout);
  assertProblem(await box.put('/workspace/new.txt', { content: 'x'.repeat(100_000) }), 507, 'insufficient_storage');
  // And every inode: then even a directory cannot be made.
  await box.sh('mkdir /workspace/many && cd /workspace/many && seq 1 5000 | xargs touch 2>/dev/null; df -Pi /workspace | tail -n 1');
  assertProblem(await box.put('/workspace/deep/er/new.txt', { content: 'x' }), 507, 'insufficient_storage');
  assertProblem(await box.files('PATCH', '', { path: '/workspace/notes.txt' }, { oldText: 'a', newText: 'b'.repeat(100_000), replaceAll: true }), 507, 'insufficient_storage');
  const upload = await rawRequest(stack.url, 'PUT', `/v1/sandboxes/${box.id}/files/archive?${new URLSearchParams({ path: '/workspace/unpacked' })}`, {
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/x-tar' },
    body: tarOf([{ name: 'big.bin', data: Buffer.alloc(1024 * 1024, 1) }]),
  });
  assertProblem(upload, 507, 'insufficient_storage');
  // Nothing was half written: the file edited is as it was.
  assert.equal((await box.view('/workspace/notes.txt')).body.content, 'a a a\n');
  await box.sh('rm -rf /workspace/fill* /workspace/many');
  const after = await box.put('/workspace/new.txt', { content: 'x'.repeat(100_000) });
  assert.equal(after.status, 201, JSON.stringify(after.body));
  // A raw write larger than the room left streams until the disk is full, then answers 507: the
  // file it replaces is as it was, and its temporary file is gone.
  await box.sh('echo raw-before > /workspace/raw.bin');
  const raw = await rawRequest(stack.url, 'PUT', `/v1/sandboxes/${box.id}/files/raw?${new URLSearchParams({ path: '/workspace/raw.bin' })}`, {
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/octet-stream' },
    body: Buffer.alloc(20 * 1024 * 1024, 3),
  });
  assertProblem(raw, 507, 'insufficient_storage');
  assert.equal((await box.sh('cat /workspace/raw.bin; ls -A /workspace | grep -c paddock-write')).stdout, 'raw-before\n0\n');
});

test('a file the kernel will not read answers 409 file_io_error to view and edit, not 500', async () => {
  const box = await sandboxFor(stack, account.key);
  for (const path of ['/proc/self/mem', '/proc/self/pagemap']) {
    const view = await box.view(path);
    assertProblem(view, 409, 'file_io_error');
    assert.match(view.body.detail, /could not complete the operation/);
    assertProblem(await box.files('PATCH', '', { path }, { oldText: 'a', newText: 'b' }), 409, 'file_io_error');
  }
});
