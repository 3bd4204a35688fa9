import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Upstream } from '../../network/resolvers.ts';
import type { InstalledPolicy } from './egress-filter.ts';
import type { EgressFiles } from './layout.ts';
import { sandboxMarker } from './launch.ts';
import { isRunning, killQuietly, readStat } from './processes.ts';

// A sandbox's resolver (egress-resolver-main.ts) from the runtime's side: started while its policy
// names domains, stopped when a change leaves none, found again by any process through its pid
// file; and the installed policy it reads, written where only root reads it.

const MAIN = fileURLToPath(new URL('./egress-resolver-main.ts', import.meta.url));
const ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' };

/** What the resolver's process is started with (its one argument, as JSON). */
export interface ResolverProcessConfig {
  /** The sandbox's held init, whose network namespace is the sandbox's, and its start time. */
  pid: number;
  startTime: string;
  policyFile: string;
  countFile: string;
  nsenter: string;
  nft: string;
  upstreams: Upstream[];
  /** Where it says it is ready. */
  readyFd?: number;
}

export interface ResolverTarget {
  id: string;
  pid: number;
  nsenter: string;
  nft: string;
  files: EgressFiles;
  upstreams: readonly Upstream[];
  /** Where it says what went wrong. */
  logFile: string;
  /** Puts it into the sandbox's cgroups: its CPU and memory are the sandbox's. */
  admit(pid: number): Promise<void>;
  deadline: number;
}

/** Starts the sandbox's resolver unless one runs, and waits until it answers. */
export async function ensureResolver(target: ResolverTarget): Promise<void> {
  if (await runningResolver(target.files)) return;
  const init = readStat(target.pid);
  if (!init) throw new Error('the sandbox ended before its resolver could start');
  const config: ResolverProcessConfig = {
    pid: target.pid,
    startTime: init.startTime,
    policyFile: target.files.policy,
    countFile: target.files.refused,
    nsenter: target.nsenter,
    nft: target.nft,
    upstreams: [...target.upstreams],
    readyFd: 3,
  };
  const log = openSync(target.logFile, 'a', 0o600);
  const child = (() => {
    try {
      // Its own session, and the sandbox's marker first: it lives as long as the sandbox, not as its starter.
      return spawn(process.execPath, [MAIN, JSON.stringify(config)], { argv0: sandboxMarker(target.id), detached: true, cwd: '/', env: ENV, stdio: ['ignore', log, log, 'pipe'] });
    } finally {
      closeSync(log);
    }
  })();
  const decided = new AbortController();
  try {
    const ready = child.stdio[3] as Readable;
    ready.on('error', () => undefined);
    const failed = Promise.race([
      once(child, 'error', { signal: decided.signal }).then(([err]) => Promise.reject(err as Error)),
      once(child, 'exit', { signal: decided.signal }).then(() => Promise.reject(new Error(`the sandbox's resolver exited as it started (${target.logFile})`))),
      delay(Math.max(0, target.deadline - Date.now()), undefined, { signal: decided.signal }).then(() => Promise.reject(new Error("the sandbox's resolver did not start in time"))),
    ]);
    failed.catch(() => undefined);
    if (child.pid === undefined) await failed;
    const pid = child.pid!;
    await Promise.race([target.admit(pid), failed]);
    await Promise.race([once(ready, 'data', { signal: decided.signal }), failed]);
    for (const stream of child.stdio) stream?.destroy();
    child.unref();
    const stat = readStat(pid);
    if (!stat) throw new Error("the sandbox's resolver ended as soon as it started");
    await writeAtomically(target.files.resolver, `${pid} ${stat.startTime}`);
  } catch (err) {
    if (child.pid !== undefined) killQuietly(child.pid);
    throw err;
  } finally {
    decided.abort();
  }
}

/** Ends the sandbox's resolver, if one runs: a policy without domains needs none. */
export async function stopResolver(files: EgressFiles): Promise<void> {
  const running = await runningResolver(files);
  if (running) killQuietly(running);
  await rm(files.resolver, { force: true });
}

async function runningResolver(files: EgressFiles): Promise<number | undefined> {
  const recorded = await readFile(files.resolver, 'utf8').catch(() => undefined);
  const [pid, startTime] = recorded?.split(' ') ?? [];
  return pid && startTime && isRunning(Number(pid), startTime) ? Number(pid) : undefined;
}

/** The policy the sandbox's filter has, as the last install or change wrote it; undefined before any. */
export async function readInstalled(files: EgressFiles): Promise<InstalledPolicy | undefined> {
  const text = await readFile(files.policy, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as InstalledPolicy);
}

export async function writeInstalled(files: EgressFiles, installed: InstalledPolicy): Promise<void> {
  await writeAtomically(files.policy, JSON.stringify(installed));
}

/** The names the sandbox's resolver refused so far. */
export async function dnsRefusals(files: EgressFiles): Promise<number> {
  const text = await readFile(files.refused, 'utf8').catch(() => '0');
  const count = Number(text);
  return Number.isSafeInteger(count) && count >= 0 ? count : 0;
}

/** A new tag for a policy being installed: its named sets' names and its connections' mark. */
export function newTag(): number {
  return 1 + Math.floor(Math.random() * 0x7ffffffe);
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${Date.now()}`;
  await writeFile(temporary, text, { mode: 0o600 });
  await rename(temporary, file);
}
