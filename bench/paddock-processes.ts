import { readdirSync, readFileSync } from 'node:fs';
import type { Stack } from './stack.ts';

export function rssOf(pid: number): number | undefined {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

export function descriptorsOf(pid: number): number | undefined {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

/** web, worker, and whatever spawner the web has now (it starts with the first exec). */
export function paddockProcesses(stack: Stack): Map<string, number> {
  const found = new Map<string, number>([
    ['web', stack.webPid],
    ['worker', stack.workerPid],
  ]);
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (Number(/PPid:\s+(\d+)/.exec(status)?.[1]) !== stack.webPid) continue;
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('spawner-main.ts')) found.set('web spawner', Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

/** Peaks of RSS and descriptors per Paddock process, sampled every 100 ms until stopped. */
export class ProcessSampler {
  readonly peakRss = new Map<string, number>();
  readonly peakFds = new Map<string, number>();
  readonly pids = new Map<string, Set<number>>();
  private readonly timer: NodeJS.Timeout;
  private readonly stack: Stack;

  constructor(stack: Stack) {
    this.stack = stack;
    this.sample();
    this.timer = setInterval(() => this.sample(), 100);
  }

  sample(): Map<string, number> {
    const now = paddockProcesses(this.stack);
    for (const [name, pid] of now) {
      (this.pids.get(name) ?? this.pids.set(name, new Set()).get(name)!).add(pid);
      this.peakRss.set(name, Math.max(this.peakRss.get(name) ?? 0, rssOf(pid) ?? 0));
      this.peakFds.set(name, Math.max(this.peakFds.get(name) ?? 0, descriptorsOf(pid) ?? 0));
    }
    return now;
  }

  reset(): void {
    this.peakRss.clear();
    this.peakFds.clear();
    this.sample();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
