import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';

// Host processes, read from /proc.

interface ProcessStat {
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** Clock ticks after boot: with the pid, it names one process even after the pid is reused. */
  startTime: string;
}

function parseStat(text: string): ProcessStat | undefined {
  // The command name may hold spaces and parentheses: count fields from after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const [state, ppid, pgrp, session] = fields;
  const startTime = fields[19];
  if (state === undefined || startTime === undefined) return undefined;
  return { state, ppid: Number(ppid), pgrp: Number(pgrp), session: Number(session), startTime };
}

/**
 * One process's stat, read synchronously: procfs answers from memory in microseconds, where an
 * asynchronous read costs several thread-pool round trips on every exec.
 */
export function readStat(pid: number): ProcessStat | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined; // gone
  }
}

/** Whether the process that had this start time still runs (a zombie has ended). */
export function isRunning(pid: number, startTime: string): boolean {
  const stat = readStat(pid);
  return stat !== undefined && stat.startTime === startTime && stat.state !== 'Z' && stat.state !== 'X';
}

/**
 * The bubblewrap process that watches over a sandbox's init (its parent, outside the namespace,
 * of the sandbox's uid). None when the init was reparented, its bubblewrap gone: its parent is
 * then the host's init or a subreaper, which must not be waited for.
 */
export function watcherOf(initPid: number): { pid: number; startTime: string } | undefined {
  const ppid = readStat(initPid)?.ppid;
  if (ppid === undefined || ppid <= 1 || commandName(ppid) !== 'bwrap') return undefined;
  const stat = readStat(ppid);
  return stat && { pid: ppid, startTime: stat.startTime };
}

function commandName(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined; // gone
  }
}

export async function waitUntilEnded(pid: number, startTime: string, deadline: number): Promise<void> {
  while (isRunning(pid, startTime)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} did not end`);
    await delay(2);
  }
}

export function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * SIGKILLs the session `leader` started: its process group at once, then whatever the group no
 * longer holds (a command that called setpgid, or a child of one that called setsid). Repeats
 * while it finds any, since a process can fork between a scan and its kill.
 */
export async function killSession(leader: number): Promise<void> {
  killQuietly(-leader);
  for (let round = 0; round < 10; round++) {
    const members = await sessionMembers(leader);
    if (members.length === 0) return;
    for (const pid of members) killQuietly(pid);
  }
}

async function sessionMembers(leader: number): Promise<number[]> {
  const stats = await processTable();
  const members = new Set<number>();
  for (const [pid, stat] of stats) {
    if (pid === leader || stat.session === leader || stat.pgrp === leader) members.add(pid);
  }
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, stat] of stats) {
      if (!members.has(pid) && (stat.ppid === leader || members.has(stat.ppid))) {
        members.add(pid);
        grew = true;
      }
    }
  }
  return [...members];
}

// Reads of /proc at a time: a scan holds this many descriptors, however many processes there are.
const SCAN_BATCH = 64;

/** Reads `/proc/<pid>/<file>` of every process, SCAN_BATCH at a time. */
async function scanProc(file: 'stat' | 'cmdline'): Promise<Map<number, string>> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
  const texts = new Map<number, string>();
  for (let i = 0; i < pids.length; i += SCAN_BATCH) {
    await Promise.all(
      pids.slice(i, i + SCAN_BATCH).map(async (pid) => {
        const text = await readFile(`/proc/${pid}/${file}`, 'utf8').catch(() => undefined);
        if (text !== undefined) texts.set(pid, text);
      }),
    );
  }
  return texts;
}

let tableScan: Promise<Map<number, ProcessStat>> | undefined;

/**
 * The live processes' stats. Many kills at once (commands timing out together) share one scan
 * rather than each reading the whole table: a kill that joins a scan begun before it still loops
 * until its session is empty, so a fork the shared scan missed is found by the next.
 */
function processTable(): Promise<Map<number, ProcessStat>> {
  tableScan ??= scanProc('stat')
    .then((texts) => {
      const stats = new Map<number, ProcessStat>();
      for (const [pid, text] of texts) {
        const stat = parseStat(text);
        if (stat && stat.state !== 'Z') stats.set(pid, stat);
      }
      return stats;
    })
    .finally(() => (tableScan = undefined));
  return tableScan;
}

/** SIGKILLs every process with this exact argument on its command line, until none is left. */
export async function killByArgument(argument: string, deadline: number): Promise<void> {
  for (;;) {
    const matching: number[] = [];
    for (const [pid, args] of await scanProc('cmdline')) if (args.split('\0').includes(argument)) matching.push(pid);
    if (matching.length === 0) return;
    if (Date.now() > deadline) throw new Error(`processes with ${argument} did not end`);
    matching.forEach(killQuietly);
    await delay(2);
  }
}
