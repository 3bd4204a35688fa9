import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killGroup, openCgroups } from '../../shared/runtime/local/cgroups.ts';
import { createLocalRuntime } from '../../shared/runtime/local/index.ts';
import { deviceOf } from '../../shared/runtime/local/runtime.ts';
import { PermanentRuntimeError } from '../../shared/runtime/types.ts';
import type { Logger } from '../../shared/logger.ts';

// The cgroup layouts a host may have, laid out in a temporary directory as the kernel would show
// them: this machine mounts v1 controllers plus a controller-less v2 hierarchy, so what is written
// for v2 controllers is checked here, against the files, rather than by the kernel.

const LIMITS = { memoryMb: 256, pidsMax: 64, cpus: 0.5 };

function layout(t: { after(fn: () => void): void }, dirs: Record<string, string[]>): string {
  const root = mkdtempSync(join(tmpdir(), 'paddock-cgroupfs-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  for (const [dir, files] of Object.entries(dirs)) {
    mkdirSync(join(root, dir), { recursive: true });
    for (const file of files) {
      const [name, content = ''] = file.split('=');
      writeFileSync(join(root, dir, name!), content);
    }
  }
  return root;
}

const read = (root: string, path: string) => readFileSync(join(root, path), 'utf8').trim();

test('cgroup v2 alone: memory, pids, cpu and io are limited through v2, and every exec gets a group cgroup.kill ends', async (t) => {
  const root = layout(t, { '.': ['cgroup.controllers=cpuset cpu io memory pids', 'cgroup.subtree_control', 'cgroup.procs'], paddock: ['cpu.idle=0', 'cpu.weight=100'] });
  const cgroups = await openCgroups({ root, privileged: true });
  assert.ok(cgroups);
  assert.deepEqual(cgroups.limited, { memory: 'v2', pids: 'v2', cpu: 'v2', io: 'v2' });
  assert.deepEqual(cgroups.missing, []);
  // All sandboxes together weigh less than the control plane beside them.
  assert.equal(read(root, 'paddock/cpu.weight'), '25');
  assert.equal(read(root, 'paddock/cpu.idle'), '0');
  // On v2 the CPU controller is the sandbox's one group: the init joins it with the others, at once.
  await cgroups.create('sbx_v2', LIMITS);
  await cgroups.admitInit('sbx_v2', 4243, { cpuOnceReady: true });
  assert.equal(read(root, 'paddock/sbx_v2/cgroup.procs'), '4243');
  assert.equal(read(root, 'paddock/io.weight'), 'default 25');

  await cgroups.create('sbx_v2', LIMITS);
  assert.equal(read(root, 'paddock/sbx_v2/memory.max'), String(256 * 1024 * 1024));
  assert.equal(read(root, 'paddock/sbx_v2/pids.max'), '64');
  assert.equal(read(root, 'paddock/sbx_v2/cpu.max'), '50000 100000');
  // Its own disk's bandwidth, on the loop device that holds it: reads and writes alike.
  assert.equal(await cgroups.limitDevice('sbx_v2', { device: '7:3', bytesPerSecond: 512_000_000 }), true);
  assert.equal(read(root, 'paddock/sbx_v2/io.max'), '7:3 rbps=512000000 wbps=512000000');
  assert.equal(await cgroups.limitDevice('sbx_v2', { device: '7:3 rbps=max', bytesPerSecond: 1 }), false, 'a device is MAJ:MIN, nothing more');
  assert.equal(read(root, 'paddock/sbx_v2/io.max'), '7:3 rbps=512000000 wbps=512000000');

  const group = await cgroups.openExec('sbx_v2');
  assert.equal(group.procsFiles.length, 1, 'one group, inside the sandbox’s: its limits apply to the exec');
  assert.match(group.procsFiles[0]!, new RegExp(`^${root}/paddock/sbx_v2/x[0-9a-f]{16}/cgroup.procs$`));
  assert.ok(group.killer && 'kill' in group.killer);
  writeFileSync(group.killer.kill, '0');
  await killGroup(group.killer);
  assert.equal(readFileSync(group.killer.kill, 'utf8'), '1');
});

test('hybrid hosts: limits through the v1 controllers, exec groups in the controller-less v2 hierarchy', async (t) => {
  const root = layout(t, {
    memory: ['cgroup.procs'],
    pids: ['cgroup.procs'],
    cpu: ['cgroup.procs'],
    'cpu/paddock': ['cpu.shares=1024'],
    unified: ['cgroup.controllers', 'cgroup.subtree_control', 'cgroup.procs'],
  });
  const cgroups = await openCgroups({ root, privileged: true });
  assert.ok(cgroups);
  assert.deepEqual(cgroups.limited, { memory: 'v1', pids: 'v1', cpu: 'v1' });
  assert.deepEqual(cgroups.missing, ['io']);
  await cgroups.create('sbx_hy', LIMITS);
  assert.equal(read(root, 'memory/paddock/sbx_hy/memory.limit_in_bytes'), String(256 * 1024 * 1024));
  assert.equal(read(root, 'pids/paddock/sbx_hy/pids.max'), '64');
  assert.equal(read(root, 'cpu/paddock/sbx_hy/cpu.cfs_quota_us'), '50000');
  assert.equal(read(root, 'cpu/paddock/cpu.shares'), '256');
  // No v2 io controller: no bandwidth cap (v1's blkio would miss buffered writes), and nothing written.
  assert.equal(await cgroups.limitDevice('sbx_hy', { device: '7:3', bytesPerSecond: 1_000_000 }), false);
  assert.equal(existsSync(join(root, 'unified/paddock/sbx_hy/io.max')), false);
  const group = await cgroups.openExec('sbx_hy');
  assert.deepEqual(
    group.procsFiles.map((f) => f.slice(root.length).replace(/x[0-9a-f]{16}/, 'X')),
    ['/memory/paddock/sbx_hy/cgroup.procs', '/pids/paddock/sbx_hy/cgroup.procs', '/cpu/paddock/sbx_hy/cgroup.procs', '/unified/paddock/sbx_hy/X/cgroup.procs'],
  );
  assert.ok(group.killer && 'kill' in group.killer);
  // A helper process joins every group at once.
  await cgroups.admitInit('sbx_hy', 4241);
  for (const hierarchy of ['memory', 'pids', 'cpu', 'unified']) assert.equal(read(root, `${hierarchy}/paddock/sbx_hy/cgroup.procs`), '4241', hierarchy);
  // The init joins every group before it starts, but the v1 CPU group, which it joins once ready.
  const hybrid = layout(t, { memory: ['cgroup.procs'], pids: ['cgroup.procs'], cpu: ['cgroup.procs'], unified: ['cgroup.controllers', 'cgroup.subtree_control', 'cgroup.procs'] });
  const init = (await openCgroups({ root: hybrid, privileged: true }))!;
  await init.create('sbx_hy', LIMITS);
  await init.admitInit('sbx_hy', 4242, { cpuOnceReady: true });
  for (const hierarchy of ['memory', 'pids', 'unified']) assert.equal(read(hybrid, `${hierarchy}/paddock/sbx_hy/cgroup.procs`), '4242', hierarchy);
  assert.equal(existsSync(join(hybrid, 'cpu/paddock/sbx_hy/cgroup.procs')), false);
  await init.admitInitToCpu('sbx_hy', 4242);
  assert.equal(read(hybrid, 'cpu/paddock/sbx_hy/cgroup.procs'), '4242');
});

test('the sandboxes’ CPU weight is set in percent of one ordinary group: cpu.weight on v2, cpu.shares on v1, the idle mark lifted first', async (t) => {
  // Another Paddock on the host left the group idle, which refuses a weight until unmarked.
  const v2 = layout(t, { '.': ['cgroup.controllers=cpu memory pids', 'cgroup.subtree_control', 'cgroup.procs'], paddock: ['cpu.idle=1', 'cpu.weight=100'] });
  await openCgroups({ root: v2, privileged: true, sandboxesCpuWeight: 10 });
  assert.equal(read(v2, 'paddock/cpu.idle'), '0');
  assert.equal(read(v2, 'paddock/cpu.weight'), '10');
  const v1 = layout(t, { memory: ['cgroup.procs'], pids: ['cgroup.procs'], cpu: ['cgroup.procs'], 'cpu/paddock': ['cpu.shares=1024', 'cpu.idle=1'] });
  const cgroups = await openCgroups({ root: v1, privileged: true, sandboxesCpuWeight: 50 });
  await cgroups!.create('sbx_w', LIMITS);
  assert.equal(read(v1, 'cpu/paddock/cpu.idle'), '0');
  assert.equal(read(v1, 'cpu/paddock/cpu.shares'), '512');
});

test('idle: the sandboxes’ group is marked idle, on v1 and v2; a kernel without cpu.idle gives it the lowest weight, and says so', async (t) => {
  const v2 = layout(t, { '.': ['cgroup.controllers=cpu memory pids', 'cgroup.subtree_control', 'cgroup.procs'], paddock: ['cpu.idle=0', 'cpu.weight=100'] });
  await openCgroups({ root: v2, privileged: true, sandboxesCpuWeight: 'idle' });
  assert.equal(read(v2, 'paddock/cpu.idle'), '1');
  assert.equal(read(v2, 'paddock/cpu.weight'), '100', 'an idle group takes no weight');
  const v1 = layout(t, { memory: ['cgroup.procs'], pids: ['cgroup.procs'], cpu: ['cgroup.procs'], 'cpu/paddock': ['cpu.shares=1024', 'cpu.idle=0'] });
  const idle = await openCgroups({ root: v1, privileged: true, sandboxesCpuWeight: 'idle' });
  await idle!.create('sbx_i', LIMITS);
  assert.equal(read(v1, 'cpu/paddock/cpu.idle'), '1');
  assert.equal(read(v1, 'cpu/paddock/cpu.shares'), '1024', 'an idle group takes no weight');
  assert.equal(read(v1, 'cpu/paddock/sbx_i/cpu.cfs_quota_us'), '50000', 'each sandbox keeps its own CPU cap');

  const warnings: string[] = [];
  const log = { warn: (...args: unknown[]) => void warnings.push(String(args.at(-1))) } as unknown as Logger;
  const oldV1 = layout(t, { memory: ['cgroup.procs'], pids: ['cgroup.procs'], cpu: ['cgroup.procs'], 'cpu/paddock': ['cpu.shares=1024'] });
  const older = await openCgroups({ root: oldV1, privileged: true, log, sandboxesCpuWeight: 'idle' });
  await older!.create('sbx_o', LIMITS);
  assert.equal(read(oldV1, 'cpu/paddock/cpu.shares'), '2');
  assert.equal(existsSync(join(oldV1, 'cpu/paddock/cpu.idle')), false, 'nothing made where the kernel offers no file');
  assert.ok(warnings.some((w) => /cpu\.idle/.test(w)), warnings.join('; '));
  const oldV2 = layout(t, { '.': ['cgroup.controllers=cpu memory pids', 'cgroup.subtree_control', 'cgroup.procs'], paddock: ['cpu.weight=100'] });
  await openCgroups({ root: oldV2, privileged: true, log, sandboxesCpuWeight: 'idle' });
  assert.equal(read(oldV2, 'paddock/cpu.weight'), '1');
});

test('cgroup v1 alone: exec groups nest in the pids hierarchy and are killed member by member', async (t) => {
  const root = layout(t, { memory: ['cgroup.procs'], pids: ['cgroup.procs'] });
  const cgroups = await openCgroups({ root, privileged: true });
  assert.ok(cgroups);
  assert.deepEqual(cgroups.missing, ['cpu', 'io']);
  await cgroups.create('sbx_v1', LIMITS);
  const group = await cgroups.openExec('sbx_v1');
  assert.ok(group.killer && 'procs' in group.killer);
  assert.match(group.killer.procs, /\/pids\/paddock\/sbx_v1\/x[0-9a-f]{16}\/cgroup\.procs$/);
  assert.deepEqual(group.procsFiles.slice(0, 1), [join(root, 'memory/paddock/sbx_v1/cgroup.procs')]);
});

test('no cgroups at all: the local runtime refuses to start sandboxes, unless the operator accepts running without limits', async (t) => {
  const root = layout(t, { '.': [] });
  assert.equal(await openCgroups({ root, privileged: true }), undefined);
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-nocgroups-'));
  const strict = createLocalRuntime({ dataDir, memoryMb: 256, pidsMax: 64, cgroupRoot: root });
  const lax = createLocalRuntime({ dataDir, memoryMb: 256, pidsMax: 64, cgroupRoot: root, allowUnlimited: true });
  // One hook, in this order: hooks run in the order they were added, and a data folder removed
  // first leaves destroy nothing to find, so the sandbox ran on after the test (one per run).
  t.after(async () => {
    await lax.destroy('sbx_unlimited');
    await Promise.all([lax.close(), strict.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });
  await assert.rejects(
    strict.create({ id: 'sbx_nolimits', accountId: 'acct_t', capSeconds: 60 }),
    (err: Error) => err instanceof PermanentRuntimeError && /PADDOCK_LOCAL_ALLOW_UNLIMITED/.test(err.message) && /memory and pids/.test(err.message),
  );
  assert.equal(await strict.get('sbx_nolimits'), undefined, 'nothing was left behind');

  assert.equal((await lax.create({ id: 'sbx_unlimited', accountId: 'acct_t', capSeconds: 60 })).status, 'running');
  // Without an exec group, a timeout still ends the command's session.
  const result = await lax.exec('sbx_unlimited', { argv: ['sh', '-c', 'sleep 30'], timeoutMs: 300 });
  assert.equal(result.timedOut, true);
});

test('device numbers read as cgroups name them, MAJ:MIN, small and large', () => {
  assert.equal(deviceOf(statSync('/dev/null').rdev), '1:3');
  assert.equal(deviceOf(statSync('/dev/zero').rdev), '1:5');
  // glibc's makedev(259, 65536) and makedev(4096, 1048575): fields split across the number.
  assert.equal(deviceOf(268_501_760), '259:65536');
  assert.equal(deviceOf(17_596_479_963_391), '4096:1048575');
});
