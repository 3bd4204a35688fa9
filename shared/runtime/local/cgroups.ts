import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../../logger.ts';
import { runningAsRoot } from './identity.ts';
import { killQuietly } from './processes.ts';

// Memory, process-count and CPU limits through cgroup v1: one group per sandbox under
// /sys/fs/cgroup/<controller>/paddock/<id>, holding the sandbox's init and every exec.

const ROOT = '/sys/fs/cgroup';
const CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
/** The CFS period: a sandbox gets `cpus` × this much CPU time in each. */
const CFS_PERIOD_US = 100_000;
type Controller = (typeof CONTROLLERS)[number];

export interface Limits {
  memoryMb: number;
  pidsMax: number;
  cpus: number;
}

export interface Cgroups {
  /** The cgroup.procs files a process writes its pid to, to join the sandbox's groups. */
  procsFiles(id: string): string[];
  create(id: string, limits: Limits): Promise<void>;
  /** Moves the sandbox's init into its groups, before it runs anything. */
  admitInit(id: string, pid: number): Promise<void>;
  /** SIGKILLs every process in the sandbox's groups until none is left, then removes the groups. */
  killAndRemove(id: string, deadline: number): Promise<void>;
}

/** The controllers this host lets Paddock use; undefined (logged) where it offers none. */
export async function openCgroups(log: Logger | undefined): Promise<Cgroups | undefined> {
  const usable: Controller[] = [];
  for (const controller of CONTROLLERS) {
    if (runningAsRoot && (await prepare(controller))) usable.push(controller);
  }
  const missing = CONTROLLERS.filter((c) => !usable.includes(c));
  if (missing.length > 0) {
    log?.warn({ missing }, 'cgroup v1 controllers unavailable: sandboxes run without those limits');
  }
  return usable.length > 0 ? cgroupsOf(usable) : undefined;
}

async function prepare(controller: Controller): Promise<boolean> {
  try {
    await access(join(ROOT, controller, 'cgroup.procs'));
    await mkdir(join(ROOT, controller, 'paddock'), { recursive: true });
    return true;
  } catch {
    return false;
  }
}

function cgroupsOf(controllers: Controller[]): Cgroups {
  const dir = (controller: Controller, id: string): string => join(ROOT, controller, 'paddock', id);
  const dirs = (id: string): string[] => controllers.map((c) => dir(c, id));

  async function limit(controller: Controller, id: string, limits: Limits): Promise<void> {
    const path = dir(controller, id);
    if (controller === 'pids') {
      await writeFile(join(path, 'pids.max'), String(limits.pidsMax));
      return;
    }
    if (controller === 'cpu') {
      await writeFile(join(path, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
      // The kernel's floor is 1 ms a period.
      await writeFile(join(path, 'cpu.cfs_quota_us'), String(Math.max(1000, Math.round(limits.cpus * CFS_PERIOD_US))));
      return;
    }
    const bytes = String(limits.memoryMb * 1024 * 1024);
    await writeFile(join(path, 'memory.limit_in_bytes'), bytes);
    // With swap accounting, memory plus swap gets the same cap: a hog must not spill into swap.
    await writeFile(join(path, 'memory.memsw.limit_in_bytes'), bytes).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async function members(id: string): Promise<number[]> {
    const lists = await Promise.all(
      dirs(id).map((path) => readFile(join(path, 'cgroup.procs'), 'utf8').catch(() => '')),
    );
    return [...new Set(lists.join('\n').split('\n').filter(Boolean).map(Number))];
  }

  return {
    procsFiles: (id) => dirs(id).map((path) => join(path, 'cgroup.procs')),

    async create(id, limits) {
      for (const controller of controllers) {
        await mkdir(dir(controller, id), { recursive: true });
        await limit(controller, id, limits);
      }
    },

    async admitInit(id, pid) {
      for (const path of dirs(id)) await writeFile(join(path, 'cgroup.procs'), String(pid));
    },

    async killAndRemove(id, deadline) {
      for (;;) {
        const pids = (await members(id)).filter((pid) => pid !== process.pid);
        if (pids.length === 0) break;
        if (Date.now() > deadline) throw new Error(`the processes of sandbox ${id} did not end`);
        pids.forEach(killQuietly);
        await delay(2);
      }
      for (const path of dirs(id)) await removeGroup(path, deadline);
    },
  };
}

async function removeGroup(path: string, deadline: number): Promise<void> {
  for (;;) {
    try {
      await rmdir(path);
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
