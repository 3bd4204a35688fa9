import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chown, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../../logger.ts';
import { runningAsRoot } from './identity.ts';
import { killQuietly } from './processes.ts';

// Limits and process groups for local sandboxes, on cgroup v2, v1, or a host with both (v1
// controllers plus a controller-less v2 hierarchy, as systemd's "hybrid" layout mounts them).
//
// Each resource is limited through v2 where the v2 hierarchy offers its controller, else through
// v1: memory (memory.max / memory.limit_in_bytes), process count (pids.max), CPU (cpu.max /
// cfs_quota, and a low weight for all sandboxes together, so the control plane on the same host
// stays ahead of them) and, on v2, a low I/O weight.
//
// Besides the sandbox's group, every exec gets a group of its own below it, so that a timeout or a
// disconnect ends everything the command started, double forks included, by one write to
// cgroup.kill (v2) instead of a scan of the host's process table. Without v2, the exec groups
// nest in the v1 pids (or freezer) hierarchy and are killed member by member.

export const CGROUP_ROOT = '/sys/fs/cgroup';
/** The CFS period: a sandbox gets `cpus` × this much CPU time in each. */
const CFS_PERIOD_US = 100_000;
// All sandboxes together weigh a quarter of one ordinary process group by default (1024 shares on
// v1, a weight of 100 on v2): when sandboxes saturate the host, the API and the workers still get
// most of the CPU, and a tenant's commands still get a share however busy the control plane is.
// PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT sets the weight, in percent of such a group, or `idle`: one
// idle group (cpu.idle, SCHED_IDLE, Linux 5.15 and later, v1 and v2) that runs only on the CPU time
// the control plane leaves, and that a control-plane task that wakes takes a core from at once.
// Measured on two cores (docs/benchmarks.md, "Measurements behind the design"): idle shortens creates under
// `npm run bench:load` (the workers' main threads had waited on the run queue twice as long as they
// ran), and costs a neighbour its share while another tenant's output flood keeps the web busy
// (`npm run bench -- isolation`: its exec p50 14 ms at a quarter, 39 ms idle). Not the default.
export type SandboxesCpuWeight = number | 'idle';
const DEFAULT_SANDBOXES_CPU_WEIGHT: SandboxesCpuWeight = 25;
const SANDBOXES_IO_WEIGHT = 25;
const GROUP = 'paddock';
/** How long a v1 exec group's kill keeps at it: past this, the sandbox's destroy ends the rest. */
const GROUP_KILL_WITHIN_MS = 10_000;

type Resource = 'memory' | 'pids' | 'cpu' | 'io';
const LIMITED: Resource[] = ['memory', 'pids', 'cpu', 'io'];
/** Without these two, a sandbox could take the host's memory or fork it to a halt. */
export const ESSENTIAL: Resource[] = ['memory', 'pids'];
const V1_NAMES: Record<Resource, string> = { memory: 'memory', pids: 'pids', cpu: 'cpu', io: 'blkio' };

export interface Limits {
  memoryMb: number;
  pidsMax: number;
  cpus: number;
}

/** A block device (its MAJ:MIN) and the bytes per second a sandbox may read and write it. */
export interface DeviceLimit {
  device: string;
  bytesPerSecond: number;
}

/** How an exec's own group is ended: a v2 cgroup.kill file, or a v1 group's member list. */
export type GroupKill = { kill: string } | { procs: string };

export interface ExecGroup {
  /** The cgroup.procs files the command's first process writes its pid to. */
  procsFiles: string[];
  /** Ends every process in the group (undefined: the host has no hierarchy for exec groups). */
  killer?: GroupKill;
  /**
   * The command's own group's cgroup.procs alone: enough for a process that is in the sandbox's
   * limit groups already (a child of its init).
   */
  own?: string;
  /** The group's name below the sandbox's v2 group, for a command to be born in (see delegate). */
  name?: string;
  /** Removes the group once the command has ended, unless something it started still runs in it. */
  release(): Promise<void>;
}

export interface Cgroups {
  /** Which resources are limited, and through which version; and what is not. */
  readonly limited: Partial<Record<Resource, 'v1' | 'v2'>>;
  readonly missing: Resource[];
  create(id: string, limits: Limits): Promise<void>;
  /**
   * Caps the sandbox's reads and writes of a device (io.max, v2 only: v1's blkio throttles miss
   * buffered writes). False when the host cannot: the caller says so, and the sandbox runs without.
   */
  limitDevice(id: string, limit: DeviceLimit): Promise<boolean>;
  /**
   * Moves a process of the sandbox's (its init, its network helper) into its groups, before it
   * runs anything. `cpuOnceReady`: all of them but a v1 CPU group, which admitInitToCpu adds once
   * the sandbox is ready and before its first command, so that its start (bubblewrap's setup, the
   * agent: Paddock's code only) does not wait behind busy sandboxes at their low weight
   * (docs/benchmarks.md, "Measurements behind the design").
   */
  admitInit(id: string, pid: number, options?: { cpuOnceReady?: boolean }): Promise<void>;
  /** The cgroup.procs files admitInit writes the pid to: for a process that admits the init itself (launch.ts). */
  initProcsFiles(id: string, options?: { cpuOnceReady?: boolean }): string[];
  /** The CPU group admitInit left out, if any; a no-op elsewhere. */
  admitInitToCpu(id: string, pid: number): Promise<void>;
  /**
   * A group for one command, inside the sandbox's groups. `byAgent`: where the sandbox's agent
   * makes exec groups itself (see delegate), it is only named here, and made on first use.
   */
  openExec(id: string, byAgent?: boolean): Promise<ExecGroup>;
  /**
   * Lets the sandbox's agent, running as `owner`, make its commands' groups and start each in its
   * own (clone3's CLONE_INTO_CGROUP needs write access to the group's cgroup.procs and to the
   * sandbox group's), and end the whole sandbox at its deadline: the sandbox's v2 group, its
   * cgroup.procs and its cgroup.kill become the owner's. Answers that directory, or undefined where
   * exec groups are not v2 groups. Its limits' files stay root's.
   */
  delegate(id: string, owner: number): Promise<string | undefined>;
  /** Kills every process in the sandbox's groups, waits until none is left, then removes the groups. */
  killAndRemove(id: string, deadline: number): Promise<void>;
}

export interface CgroupOptions {
  /** Where the cgroup file systems are mounted; tests pass a directory laid out like one. */
  root?: string;
  log?: Logger;
  /** Whether this process may manage cgroups (it must be root on a real host). */
  privileged?: boolean;
  /** All sandboxes together: a weight in percent of one ordinary process group (default 25), or an idle group. */
  sandboxesCpuWeight?: SandboxesCpuWeight;
}

interface Hierarchies {
  /** The v2 mount and the controllers it lets Paddock's group use. */
  v2?: { mount: string; controllers: Set<string> };
  /** v1 mounts by controller name. */
  v1: Map<string, string>;
}

/** The controllers this host lets Paddock use; undefined when it offers no hierarchy at all. */
export async function openCgroups(options: CgroupOptions = {}): Promise<Cgroups | undefined> {
  const root = options.root ?? CGROUP_ROOT;
  if (!(options.privileged ?? runningAsRoot)) return undefined;
  const weight = options.sandboxesCpuWeight ?? DEFAULT_SANDBOXES_CPU_WEIGHT;
  const found = await discover(root, weight, options.log);
  const limited: Partial<Record<Resource, 'v1' | 'v2'>> = {};
  for (const resource of LIMITED) {
    if (found.v2?.controllers.has(resource)) limited[resource] = 'v2';
    // v1's blkio weights work only under schedulers few hosts use: I/O is limited on v2 alone.
    else if (resource !== 'io' && found.v1.has(V1_NAMES[resource])) limited[resource] = 'v1';
  }
  const killHierarchy = found.v2 ? 'v2' : found.v1.has('pids') ? 'pids' : found.v1.has('freezer') ? 'freezer' : undefined;
  if (!killHierarchy && Object.keys(limited).length === 0) return undefined;
  const missing = LIMITED.filter((r) => !limited[r]);
  if (missing.length > 0) options.log?.warn({ missing, limited }, 'cgroup controllers unavailable: sandboxes run without those limits');
  return cgroupsOf(found, limited, missing, killHierarchy, weight, options.log);
}

async function discover(root: string, cpuWeight: SandboxesCpuWeight, log: Logger | undefined): Promise<Hierarchies> {
  const found: Hierarchies = { v1: new Map() };
  for (const mount of [root, join(root, 'unified')]) {
    if (!(await exists(join(mount, 'cgroup.controllers')))) continue;
    found.v2 = { mount, controllers: await enableV2(mount, cpuWeight, log) };
    break;
  }
  if (found.v2?.mount !== root) {
    for (const name of ['memory', 'pids', 'cpu', 'blkio', 'freezer']) {
      const mount = join(root, name);
      if (!(await exists(join(mount, 'cgroup.procs'))) || (await exists(join(mount, 'cgroup.controllers')))) continue;
      try {
        await mkdir(join(mount, GROUP), { recursive: true });
        found.v1.set(name, mount);
      } catch (err) {
        log?.warn({ err, controller: name }, 'cannot use the cgroup v1 controller');
      }
    }
  }
  return found;
}

/**
 * Makes the wanted v2 controllers available to the sandboxes' groups: enabled in the root's and
 * in Paddock's group's cgroup.subtree_control. A controller the kernel or the delegation refuses
 * (a root with processes of its own answers EBUSY) is left to v1, or missing.
 */
async function enableV2(mount: string, cpuWeight: SandboxesCpuWeight, log: Logger | undefined): Promise<Set<string>> {
  await mkdir(join(mount, GROUP), { recursive: true });
  const offered = (await readFile(join(mount, 'cgroup.controllers'), 'utf8').catch(() => '')).split(/\s+/);
  const enabled = new Set<string>();
  for (const controller of LIMITED) {
    if (!offered.includes(controller)) continue;
    try {
      await writeFile(join(mount, 'cgroup.subtree_control'), `+${controller}`);
      await writeFile(join(mount, GROUP, 'cgroup.subtree_control'), `+${controller}`);
      enabled.add(controller);
    } catch (err) {
      log?.warn({ err, controller }, 'cannot enable the cgroup v2 controller for sandboxes');
    }
  }
  const group = join(mount, GROUP);
  if (enabled.has('cpu')) await claimCpu(group, 'cpu.weight', cpuWeight, log);
  if (enabled.has('io')) await writeFile(join(group, 'io.weight'), `default ${SANDBOXES_IO_WEIGHT}`).catch(() => undefined);
  return enabled;
}

function cgroupsOf(
  found: Hierarchies,
  limited: Partial<Record<Resource, 'v1' | 'v2'>>,
  missing: Resource[],
  killHierarchy: 'v2' | 'pids' | 'freezer' | undefined,
  cpuWeight: SandboxesCpuWeight,
  log: Logger | undefined,
): Cgroups {
  const v2 = found.v2;
  const v2Dir = (id: string): string | undefined => (v2 ? join(v2.mount, GROUP, id) : undefined);
  // The v1 controllers a sandbox has groups in: those that limit something, and the kill hierarchy.
  const v1Names = new Set<string>();
  for (const resource of LIMITED) if (limited[resource] === 'v1') v1Names.add(V1_NAMES[resource]);
  if (killHierarchy === 'pids' || killHierarchy === 'freezer') v1Names.add(killHierarchy);
  const v1Dir = (name: string, id: string): string => join(found.v1.get(name)!, GROUP, id);
  const dirs = (id: string): string[] => [...[...v1Names].map((name) => v1Dir(name, id)), ...(v2 ? [v2Dir(id)!] : [])];
  // On v2 the CPU controller shares the sandbox's one group with the others: it cannot come later.
  const laterCpuDir = (id: string): string | undefined => (limited.cpu === 'v1' ? v1Dir('cpu', id) : undefined);

  async function setLimits(id: string, limits: Limits): Promise<void> {
    const memory = String(limits.memoryMb * 1024 * 1024);
    const quota = Math.max(1000, Math.round(limits.cpus * CFS_PERIOD_US)); // the kernel's floor is 1 ms a period
    // Each controller's files in order, the controllers side by side: on a busy host every file
    // written is a wait for the event loop's turn, and a create waits for them all.
    const memoryLimit = async (): Promise<void> => {
      if (limited.memory === 'v2') {
        await writeFile(join(v2Dir(id)!, 'memory.max'), memory);
        await writeOptional(join(v2Dir(id)!, 'memory.swap.max'), '0');
      } else if (limited.memory === 'v1') {
        await writeFile(join(v1Dir('memory', id), 'memory.limit_in_bytes'), memory);
        // With swap accounting, memory plus swap gets the same cap: a hog must not spill into swap.
        await writeOptional(join(v1Dir('memory', id), 'memory.memsw.limit_in_bytes'), memory);
      }
    };
    const pidsLimit = async (): Promise<void> => {
      if (limited.pids === 'v2') await writeFile(join(v2Dir(id)!, 'pids.max'), String(limits.pidsMax));
      else if (limited.pids === 'v1') await writeFile(join(v1Dir('pids', id), 'pids.max'), String(limits.pidsMax));
    };
    const cpuLimit = async (): Promise<void> => {
      if (limited.cpu === 'v2') await writeFile(join(v2Dir(id)!, 'cpu.max'), `${quota} ${CFS_PERIOD_US}`);
      else if (limited.cpu === 'v1') {
        await writeFile(join(v1Dir('cpu', id), 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
        await writeFile(join(v1Dir('cpu', id), 'cpu.cfs_quota_us'), String(quota));
      }
    };
    await settledAll([memoryLimit(), pidsLimit(), cpuLimit()]);
  }

  let sharesSet = false;
  async function lowerV1Shares(): Promise<void> {
    if (sharesSet || limited.cpu !== 'v1') return;
    await claimCpu(join(found.v1.get('cpu')!, GROUP), 'cpu.shares', cpuWeight, log);
    sharesSet = true;
  }

  return {
    limited,
    missing,

    async create(id, limits) {
      await lowerV1Shares();
      await settledAll(dirs(id).map((dir) => mkdir(dir, { recursive: true })));
      await setLimits(id, limits);
    },

    async limitDevice(id, { device, bytesPerSecond }) {
      if (limited.io !== 'v2' || !/^\d+:\d+$/.test(device)) return false;
      const bps = Math.max(1, Math.round(bytesPerSecond));
      return writeFile(join(v2Dir(id)!, 'io.max'), `${device} rbps=${bps} wbps=${bps}`).then(
        () => true,
        () => false,
      );
    },

    async admitInit(id, pid, options = {}) {
      await admitTo(this.initProcsFiles(id, options), pid);
    },

    initProcsFiles(id, options = {}) {
      const later = options.cpuOnceReady ? laterCpuDir(id) : undefined;
      return dirs(id).filter((dir) => dir !== later).map((dir) => join(dir, 'cgroup.procs'));
    },

    async admitInitToCpu(id, pid) {
      const later = laterCpuDir(id);
      if (later) await writeFile(join(later, 'cgroup.procs'), String(pid));
    },

    async delegate(id, owner) {
      if (killHierarchy !== 'v2') return undefined;
      await chown(v2Dir(id)!, owner, owner);
      await chown(join(v2Dir(id)!, 'cgroup.procs'), owner, owner);
      // The agent's own end of the sandbox at its deadline (Linux 5.14 and later have the file).
      await chown(join(v2Dir(id)!, 'cgroup.kill'), owner, owner).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
      return v2Dir(id)!;
    },

    async openExec(id, byAgent) {
      const limitProcs = [...v1Names].filter((name) => name !== killHierarchy).map((name) => join(v1Dir(name, id), 'cgroup.procs'));
      if (!killHierarchy) return { procsFiles: limitProcs, release: async () => undefined };
      const base = killHierarchy === 'v2' ? v2Dir(id)! : v1Dir(killHierarchy, id);
      const dir = join(base, `x${randomBytes(8).toString('hex')}`);
      if (!(byAgent && killHierarchy === 'v2')) await mkdir(dir);
      return {
        name: basename(dir),
        procsFiles: [...limitProcs, join(dir, 'cgroup.procs')],
        own: join(dir, 'cgroup.procs'),
        killer: killHierarchy === 'v2' ? { kill: join(dir, 'cgroup.kill') } : { procs: join(dir, 'cgroup.procs') },
        // A group that a background process still holds stays until the sandbox goes.
        release: () => rmdir(dir).catch(() => undefined),
      };
    },

    async killAndRemove(id, deadline) {
      const v2Group = v2Dir(id);
      if (v2Group && (await exists(v2Group))) await writeFile(join(v2Group, 'cgroup.kill'), '1').catch(() => undefined);
      for (;;) {
        const pids = (await Promise.all(dirs(id).map((dir) => membersOfTree(dir)))).flat().filter((pid) => pid !== process.pid);
        if (pids.length === 0) break;
        if (Date.now() > deadline) throw new Error(`the processes of sandbox ${id} did not end`);
        pids.forEach(killQuietly);
        await delay(2);
      }
      for (const dir of dirs(id)) await removeTree(dir, deadline);
    },
  };
}

/** Ends every process of an exec's group, however it forked. */
export async function killGroup(killer: GroupKill): Promise<void> {
  // v2's cgroup.kill signals the whole group at once, forks in flight included, but returns before
  // they have exited: until then they still run and hold places under the sandbox's process limit,
  // so the group is watched until it is empty, as v1's is.
  const v2 = 'kill' in killer;
  if (v2) await writeFile(killer.kill, '1').catch(() => undefined);
  const procs = v2 ? join(dirname(killer.kill), 'cgroup.procs') : killer.procs;
  // v1 has no cgroup.kill: kill the members until none is left (a fork between a read and its
  // kill lands in the same group and is found by the next round). Bounded by time, not rounds: on
  // a busy host a killed process leaves the group only once the scheduler lets it run its exit.
  const deadline = Date.now() + GROUP_KILL_WITHIN_MS;
  for (let round = 0; Date.now() < deadline; round++) {
    const pids = (await readFile(procs, 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number);
    if (pids.length === 0) return;
    if (!v2) pids.forEach(killQuietly);
    await delay(Math.min(2 + round, 50));
  }
}

async function membersOfTree(dir: string): Promise<number[]> {
  const own = (await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number);
  const children = await subgroups(dir);
  return [...own, ...(await Promise.all(children.map(membersOfTree))).flat()];
}

async function subgroups(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory()).map((e) => join(dir, e.name));
}

async function removeTree(dir: string, deadline: number): Promise<void> {
  for (const child of await subgroups(dir)) await removeTree(child, deadline);
  for (;;) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      // A killed task leaves its group a moment after it leaves cgroup.procs.
      if (code !== 'EBUSY' || Date.now() > deadline) throw err;
      await delay(2);
    }
  }
}

/**
 * The sandboxes' group's claim on the CPU: idle, or a weight in percent of one ordinary group
 * (`cpu.weight` on v2, whose default is 100; `cpu.shares` on v1, 1024). A kernel without cpu.idle
 * gets the lowest weight instead. The group is the host's, and another Paddock may have left it
 * idle: a group marked idle refuses a weight (EINVAL), so the mark is lifted first.
 */
async function claimCpu(group: string, weightFile: 'cpu.weight' | 'cpu.shares', claim: SandboxesCpuWeight, log: Logger | undefined): Promise<void> {
  const idle = join(group, 'cpu.idle');
  if (claim === 'idle') {
    const marked = await writeOptional(idle, '1').then(() => exists(idle), () => false);
    if (marked) return;
    log?.warn('this kernel cannot make the sandboxes\' CPU group idle (cpu.idle, Linux 5.15 and later): they get the lowest CPU weight instead');
  } else {
    await writeOptional(idle, '0').catch(() => undefined);
  }
  const percent = claim === 'idle' ? 0 : claim;
  const value = weightFile === 'cpu.weight' ? Math.max(1, percent) : Math.max(2, Math.round((1024 * percent) / 100));
  await writeOptional(join(group, weightFile), String(value)).catch((err: unknown) => log?.warn({ err, group }, 'could not set the sandboxes\' CPU weight'));
}

/**
 * Waits for every one, then fails with the first failure: a caller that cleans up after a failure
 * must not start while some of the work is still under way (a group made after its removal).
 */
export async function settledAll(work: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Moves `pid` into the groups whose cgroup.procs files these are. */
export async function admitTo(procsFiles: string[], pid: number): Promise<void> {
  await settledAll(procsFiles.map((file) => writeFile(file, String(pid))));
}

async function writeOptional(path: string, value: string): Promise<void> {
  // Written only where the kernel offers the file: no O_CREAT.
  await writeFile(path, value, { flag: constants.O_WRONLY | constants.O_TRUNC }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
