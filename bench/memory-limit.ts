import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// Node sizes its heap from the memory its cgroup allows (a young generation of 64 MB semi-spaces
// and a 4.5 GB heap limit on this 24 GiB host, unconstrained; a fraction of that in a pod). A
// process measured for memory runs under the limit its deployment gives it, as it runs in
// production, or its figures are the host's heap sizing rather than its own.

const CGROUP_ROOT = '/sys/fs/cgroup';
const MANIFESTS = resolve(import.meta.dirname, '../deploy/kubernetes/base');

/** The memory limit (MiB) a manifest of deploy/kubernetes/base gives its container. */
export function deployedMemoryLimitMb(manifest: string): number {
  const text = readFileSync(join(MANIFESTS, manifest), 'utf8');
  const found = /limits:\s*\n(?:\s+\w+:.*\n)*?\s+memory:\s*(\d+)(Mi|Gi)/.exec(text);
  if (!found) throw new Error(`no memory limit in ${manifest}`);
  return Number(found[1]) * (found[2] === 'Gi' ? 1024 : 1);
}

export interface MemoryCgroup {
  /** Where a process writes its pid to join. */
  procs: string;
  /** Removes the group, once its processes have exited. */
  remove(): void;
}

/** A memory cgroup of `limitMb` (v2, or v1's memory controller); undefined where none can be made. */
export function memoryCgroup(name: string, limitMb: number): MemoryCgroup | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const bytes = String(limitMb * 1024 * 1024);
  const leaf = `paddock-bench-${name}-${process.pid}`;
  let dir: string;
  try {
    const controllers = existsSync(join(CGROUP_ROOT, 'cgroup.controllers')) ? readFileSync(join(CGROUP_ROOT, 'cgroup.controllers'), 'utf8').split(/\s+/) : [];
    if (controllers.includes('memory')) {
      dir = join(CGROUP_ROOT, leaf);
      mkdirSync(dir);
      writeFileSync(join(dir, 'memory.max'), bytes);
    } else if (existsSync(join(CGROUP_ROOT, 'memory', 'memory.limit_in_bytes'))) {
      dir = join(CGROUP_ROOT, 'memory', leaf);
      mkdirSync(dir);
      writeFileSync(join(dir, 'memory.limit_in_bytes'), bytes);
    } else {
      return undefined;
    }
  } catch {
    return undefined;
  }
  return {
    procs: join(dir, 'cgroup.procs'),
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // Still holding a process (killed late): left for the next boot, as it limits nothing.
      }
    },
  };
}
