import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statfsSync } from 'node:fs';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';

// Disk quotas for local sandboxes: a tenant writing without end meets ENOSPC
// inside its own disk, never the host's file system (which holds PostgreSQL too); the space is
// reclaimed at destroy. And what a sandbox can read names no host path (item 10).

const DISK_MB = 32;
const local = testRuntime() === 'local';
const stack = await startSandboxStack({
  overrides: { PADDOCK_LOCAL_DISK_MB: String(DISK_MB), PADDOCK_LOCAL_DISK_INODES: '1024', PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' },
});

async function sh(account: TestAccount, id: string, command: string) {
  const res = await call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: account.key, body: { command, timeoutSeconds: 60 } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as { exitCode: number; stdout: string; stderr: string };
}

const hostFree = () => {
  const s = statfsSync(stack.config.PADDOCK_DATA_DIR);
  return s.bavail * s.bsize;
};
const loopDevices = () =>
  execFileSync('losetup', ['--list', '--noheadings', '--output', 'BACK-FILE'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(stack.config.PADDOCK_DATA_DIR));
const loopMounts = () => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(stack.config.PADDOCK_DATA_DIR));

test('writing past the disk quota fails with ENOSPC inside; the host loses at most the quota; destroy gives it back', { skip: !local }, async () => {
  const account = await newAccount(stack.url, 'diskhog');
  const [hog, neighbour] = await Promise.all([createSandbox(stack.url, account.key), createSandbox(stack.url, account.key)]);
  // Each disk is mounted in its sandbox's own mount namespace, never the host's (whose every mount
  // each new sandbox's namespace would start with a copy of).
  assert.deepEqual(loopMounts(), [], 'no sandbox disk in the host mount table');
  assert.equal(loopDevices().length, 2, 'a loop device each');
  const before = hostFree();
  const dd = await sh(account, hog.body.id, 'dd if=/dev/zero of=/workspace/big bs=1M count=128 2>&1; echo "exit $?"');
  assert.match(dd.stdout, /No space left on device/);
  assert.match(dd.stdout, /exit 1/);
  assert.ok(before - hostFree() < (DISK_MB + 8) * 1024 * 1024, `the host lost ${before - hostFree()} bytes`);
  const files = await sh(account, hog.body.id, 'rm -f /workspace/big; cd /workspace && i=0; while [ $i -lt 3000 ]; do : > f$i 2>/dev/null || break; i=$((i+1)); done; echo $i');
  assert.ok(Number(files.stdout) < 1100, `made ${files.stdout.trim()} files past an inode limit of 1024`);
  // The neighbour's disk is its own.
  assert.equal((await sh(account, neighbour.body.id, 'echo ok > /workspace/f && cat /workspace/f')).stdout, 'ok\n');
  // The file routes work on it.
  const put = await call(stack.url, 'PUT', `/v1/sandboxes/${neighbour.body.id}/files?path=notes.txt`, { token: account.key, body: { content: 'hello\n' } });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  assert.equal((await call(stack.url, 'GET', `/v1/sandboxes/${neighbour.body.id}/files?path=notes.txt`, { token: account.key })).body.content, 'hello\n');
  // The workspace starts empty: no lost+found.
  const fresh = await createSandbox(stack.url, account.key);
  assert.equal((await sh(account, fresh.body.id, 'ls -A /workspace')).stdout, '');

  for (const s of [hog, neighbour, fresh]) {
    assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${s.body.id}`, { token: account.key })).status, 200);
  }
  await eventually('every disk is unmounted', 10_000, async () => (loopMounts().length === 0 ? true : undefined));
  // Its loop device went with it (detached once mounted: the kernel frees it with the unmount).
  await eventually('every loop device is freed', 10_000, async () => (loopDevices().length === 0 ? true : undefined));
});

test('what a sandbox can read of its mounts names no host path', async () => {
  const account = await newAccount(stack.url, 'mountinfo');
  const s = await createSandbox(stack.url, account.key);
  const info = await sh(account, s.body.id, 'cat /proc/self/mountinfo');
  assert.equal(info.exitCode, 0);
  assert.doesNotMatch(info.stdout, new RegExp(stack.config.PADDOCK_DATA_DIR.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  assert.doesNotMatch(info.stdout, /paddock/i);
});
