import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { call } from '../helpers/http.ts';
import type { TestAccount } from '../helpers/accounts.ts';
import type { Replicas } from '../helpers/replicas.ts';
import { testRuntime } from '../helpers/sandbox-stack.ts';
import { hostUidFor } from '../../shared/runtime/local/identity.ts';
import { podNameFor } from '../../shared/runtime/kubernetes/names.ts';

// The session cap as a hard one: a sandbox's processes end at expiresAt plus the grace with no
// Paddock process alive (the local sandbox's own init; a pod's activeDeadlineSeconds, played by
// the stand-in), and a worker that comes back leaves nothing of it on the host.

/** Past expiresAt + grace, how long the end may take on a loaded machine: the deadline's whole-second rounding and the kills. */
export const END_SLACK_MS = 8000;

/** The host uid a sandbox's processes run as (Paddock runs as root: each sandbox has its own). */
export async function sandboxUid(replicas: Replicas, sandboxId: string): Promise<number> {
  if (testRuntime() === 'local') return hostUidFor(sandboxId);
  // The stand-in's pod runs on a local sandbox of its own, named in the container's id.
  const core = replicas.kubeConfig!.makeApiClient(CoreV1Api);
  const pod = await core.readNamespacedPod({ name: podNameFor(sandboxId)!, namespace: replicas.config.PADDOCK_KUBE_NAMESPACE });
  const containerId = pod.status?.containerStatuses?.[0]?.containerID ?? '';
  assert.match(containerId, /^standin:\/\/sbx_/);
  return hostUidFor(containerId.slice('standin://'.length));
}

/** The host's processes of that uid, zombies left out, as `pid args`. */
export function processesOf(uid: number): string[] {
  const found: string[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) !== uid || /^State:\s+Z/m.test(status)) continue;
      found.push(`${name} ${readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim()}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** A running sandbox of the account's, with a background process that would run for ten minutes. */
export async function sandboxWithWork(url: string, account: TestAccount): Promise<{ id: string; expiresAt: number }> {
  const created = await call(url, 'POST', '/v1/sandboxes', { token: account.key, body: {} });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.status, 'running');
  const id = created.body.id as string;
  const started = await call(url, 'POST', `/v1/sandboxes/${id}/exec`, { token: account.key, body: { command: 'sleep 600', background: true } });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  return { id, expiresAt: Date.parse(created.body.expiresAt as string) };
}

/**
 * With web and worker down: the sandbox still runs just before expiresAt, and nothing of it runs
 * once expiresAt + grace (+ END_SLACK_MS) has passed.
 */
export async function assertEndsAtItsCap(uid: number, expiresAt: number, graceSeconds: number): Promise<void> {
  for (let tries = 0; !processesOf(uid).some((p) => p.includes('sleep 600')); tries++) {
    assert.ok(tries < 30, `its background process runs: ${processesOf(uid).join('; ')}`);
    await sleep(100);
  }
  const before = expiresAt - 1000 - Date.now();
  if (before > 0) {
    await sleep(before);
    assert.ok(processesOf(uid).some((p) => p.includes('sleep 600')), 'it runs until its cap');
  }
  const deadline = expiresAt + graceSeconds * 1000 + END_SLACK_MS;
  while (processesOf(uid).length > 0 && Date.now() < deadline) await sleep(100);
  const left = processesOf(uid);
  assert.deepEqual(left, [], `${Date.now() - expiresAt} ms past expiresAt, with no Paddock process alive, the sandbox still runs`);
}

/** What a local sandbox holds on the host besides processes: its directory, cgroups, mount and loop device. */
export function localLeftovers(dataDir: string, sandboxId: string): string[] {
  const left: string[] = [];
  const dir = join(dataDir, 'sandboxes', sandboxId);
  if (existsSync(dir)) left.push(dir);
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    const group = join('/sys/fs/cgroup', hierarchy, 'paddock', sandboxId);
    if (existsSync(group)) left.push(group);
  }
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) if (line.includes(`/${sandboxId}/`)) left.push(line);
  for (const loop of readdirSync('/sys/block').filter((n) => n.startsWith('loop'))) {
    const backing = join('/sys/block', loop, 'loop', 'backing_file');
    if (existsSync(backing) && readFileSync(backing, 'utf8').includes(`/${sandboxId}/`)) left.push(`/dev/${loop}`);
  }
  return left;
}
