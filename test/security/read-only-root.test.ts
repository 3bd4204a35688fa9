import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { podNameFor } from '../../shared/runtime/kubernetes/names.ts';
import { sandboxFor } from '../files/helpers.ts';
import { tarOf, type TarMember } from '../files/tar-writer.ts';

// A sandbox's file system is read-only but for /workspace, /tmp and /dev/shm, on both runtimes.
// Otherwise a key with `exec` and `files:write` but without `allowlist:write` lifts the allowlist:
// it writes a shared object and an /etc/ld.so.preload naming it (or replaces a system directory
// that is a symlink in the sandbox's root), and the next allowed command runs the tenant's code,
// the same job as the LD_PRELOAD variable the policy refuses. Tried through HTTP as that key would.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });

const MARKER = 'PLANTED-BY-THE-TENANT';

/** A shared object whose constructor prints MARKER: what the preload would run inside `ls`. */
function plantedObject(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-preload-'));
  try {
    writeFileSync(
      join(dir, 'planted.c'),
      `#include <unistd.h>\n__attribute__((constructor)) static void planted(void) { static const char m[] = "${MARKER}\\n"; write(1, m, sizeof m - 1); }\n`,
    );
    const built = spawnSync(process.env.CC ?? 'cc', ['-shared', '-fPIC', '-o', join(dir, 'planted.so'), join(dir, 'planted.c')], { encoding: 'utf8' });
    assert.equal(built.status, 0, `cc: ${built.stderr}`);
    return readFileSync(join(dir, 'planted.so'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const planted = plantedObject();

/** An account under an allowlist of `ls`, and its agent's key: exec and files, not the allowlist. */
async function boundAgent(label: string): Promise<{ owner: TestAccount; agentKey: string; sandboxId: string }> {
  const owner = await newAccount(stack.url, label);
  const minted = await call(stack.url, 'POST', '/v1/api-keys', {
    token: owner.token,
    body: { name: 'agent', scopes: ['sandboxes:read', 'exec', 'files:read', 'files:write'] },
  });
  assert.equal(minted.status, 201, JSON.stringify(minted.body));
  const box = await sandboxFor(stack, owner.key);
  const listed = await call(stack.url, 'PUT', '/v1/allowlist', { token: owner.key, body: { commands: ['ls'] } });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  return { owner, agentKey: minted.body.key as string, sandboxId: box.id };
}

const exec = (key: string, sandboxId: string, command: string[]) =>
  call(stack.url, 'POST', `/v1/sandboxes/${sandboxId}/exec`, { token: key, body: { command, timeoutSeconds: 20 } });

const put = (key: string, sandboxId: string, path: string, body: { content?: string; contentBase64?: string }) =>
  call(stack.url, 'PUT', `/v1/sandboxes/${sandboxId}/files?${new URLSearchParams({ path, overwrite: 'true' })}`, { token: key, body });

const uploadArchive = (key: string, sandboxId: string, path: string, members: TarMember[]) =>
  rawRequest(stack.url, 'PUT', `/v1/sandboxes/${sandboxId}/files/archive?${new URLSearchParams({ path })}`, {
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-tar' },
    body: tarOf(members),
  });

/** `ls` as the agent may run it: it answers, and nothing of the tenant's ran inside it. */
async function assertLsRunsClean(agentKey: string, sandboxId: string, argv = ['ls', '/']): Promise<void> {
  const res = await exec(agentKey, sandboxId, argv);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.exitCode, 0, JSON.stringify(res.body));
  assert.doesNotMatch(res.body.stdout, new RegExp(MARKER), 'the planted code ran');
  assert.doesNotMatch(res.body.stderr, /ld\.so|preload/i, 'the dynamic loader was told to preload something');
}

test('a key without allowlist:write cannot lift the allowlist through /etc/ld.so.preload written by PUT files', async () => {
  const { agentKey, sandboxId } = await boundAgent('preload-put');
  assertProblem(await exec(agentKey, sandboxId, ['sh', '-c', 'id']), 403, 'command_not_allowed');

  // Its workspace is its own: the object lands there.
  const object = await put(agentKey, sandboxId, '/workspace/planted.so', { contentBase64: planted.toString('base64') });
  assert.equal(object.status, 201, JSON.stringify(object.body));
  // /etc is not: a clear refusal, not a 500.
  const preload = await put(agentKey, sandboxId, '/etc/ld.so.preload', { content: '/workspace/planted.so\n' });
  assertProblem(preload, 403, 'permission_denied');
  assert.match(preload.body.detail, /read-only/);
  assertProblem(await call(stack.url, 'GET', `/v1/sandboxes/${sandboxId}/files?path=/etc/ld.so.preload`, { token: agentKey }), 404, 'file_not_found');

  await assertLsRunsClean(agentKey, sandboxId);
});

test('…nor through an archive extracted at / or at /etc', async () => {
  const { agentKey, sandboxId } = await boundAgent('preload-archive');
  const atRoot = await uploadArchive(agentKey, sandboxId, '/', [
    { name: 'workspace/planted.so', data: planted },
    { name: 'etc/ld.so.preload', data: '/workspace/planted.so\n' },
  ]);
  assertProblem(atRoot, 403, 'permission_denied');
  const atEtc = await uploadArchive(agentKey, sandboxId, '/etc', [{ name: 'ld.so.preload', data: '/tmp/planted.so\n' }]);
  assertProblem(atEtc, 403, 'permission_denied');
  // The object is still the tenant's to place where it may write; the preload is not.
  assert.equal((await put(agentKey, sandboxId, '/tmp/planted.so', { contentBase64: planted.toString('base64') })).status, 201);

  await assertLsRunsClean(agentKey, sandboxId);
});

test('a system directory cannot be stood in for, nor a file a program reads planted: /bin by an archive, /etc/profile, /usr/local/bin, a new /opt', async () => {
  const { agentKey, sandboxId } = await boundAgent('standin-dirs');
  // An allowed program named by a path in a system directory: /bin, a symlink in the sandbox's
  // root where /usr is merged, would become the tenant's directory.
  const script = `#!/usr/bin/sh\necho ${MARKER}\n`;
  const bin = await uploadArchive(agentKey, sandboxId, '/', [
    { name: 'bin', type: 'dir' },
    { name: 'bin/ls', data: script, mode: 0o755 },
  ]);
  assertProblem(bin, 403, 'permission_denied');
  await assertLsRunsClean(agentKey, sandboxId, ['/bin/ls', '/']);

  for (const path of ['/etc/profile', '/etc/environment', '/usr/local/bin/ls', '/opt/tools/bin/ls', '/home/sandbox/.profile', '/planted']) {
    const res = await put(agentKey, sandboxId, path, { content: script });
    assertProblem(res, 403, 'permission_denied');
  }
  // An edit writes as a PUT does.
  const edit = await call(stack.url, 'PATCH', `/v1/sandboxes/${sandboxId}/files?path=/etc/hosts`, {
    token: agentKey,
    body: { oldText: 'localhost', newText: 'planted', replaceAll: true },
  });
  assertProblem(edit, 403, 'permission_denied');
  for (const path of ['/etc/profile', '/opt']) {
    assertProblem(await call(stack.url, 'GET', `/v1/sandboxes/${sandboxId}/files?path=${path}`, { token: agentKey }), 404, 'file_not_found');
  }
  await assertLsRunsClean(agentKey, sandboxId, ['ls', '/etc']);
});

test('/workspace, /tmp and /dev/shm stay writable, by the file routes and by commands; nothing else is', async () => {
  const account = await newAccount(stack.url, 'writable');
  const box = await sandboxFor(stack, account.key);
  for (const dir of ['/workspace', '/tmp', '/dev/shm']) {
    const written = await put(account.key, box.id, `${dir}/made/by/put.txt`, { content: dir });
    assert.equal(written.status, 201, `${dir}: ${JSON.stringify(written.body)}`);
    const view = await call(stack.url, 'GET', `/v1/sandboxes/${box.id}/files?path=${dir}/made/by/put.txt`, { token: account.key });
    assert.equal(view.body.content, dir);
  }
  const extracted = await uploadArchive(account.key, box.id, '/tmp/unpacked', [{ name: 'a.txt', data: 'a' }]);
  assert.equal(extracted.status, 201, JSON.stringify(extracted.body));

  const probe = await call(stack.url, 'POST', `/v1/sandboxes/${box.id}/exec`, {
    token: account.key,
    body: {
      command: 'for d in /workspace /tmp /dev/shm / /etc /dev /var /usr /opt /root /home; do if (echo x > "$d/.probe") 2>/dev/null; then echo "writable $d"; fi; done',
    },
  });
  assert.equal(probe.status, 200, JSON.stringify(probe.body));
  assert.deepEqual(
    probe.body.stdout.split('\n').filter((line: string) => line.startsWith('writable')),
    ['writable /workspace', 'writable /tmp', 'writable /dev/shm'],
  );

  if (testRuntime() === 'kubernetes') {
    // The pod as the cluster received it: a read-only root, and an emptyDir at each writable place.
    const core = stack.kubeConfig!.makeApiClient(CoreV1Api);
    const pod = await core.readNamespacedPod({ name: podNameFor(box.id)!, namespace: stack.config.PADDOCK_KUBE_NAMESPACE });
    const container = pod.spec!.containers[0]!;
    assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
    const volumes = new Map((pod.spec!.volumes ?? []).map((v) => [v.name, v]));
    const mounted = (container.volumeMounts ?? []).map((m) => [m.mountPath, volumes.get(m.name)?.emptyDir !== undefined] as const);
    assert.deepEqual(Object.fromEntries(mounted), { '/workspace': true, '/tmp': true, '/dev/shm': true });
  }
});
