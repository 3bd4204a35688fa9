import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { memoryCgroup } from './memory-limit.ts';

const root = resolve(import.meta.dirname, '..');
const live = new Set<ChildProcess>();

export interface NodeProcess {
  url: string;
  pid: number;
  /** SIGTERM, as an orchestrator would, so the process drains and writes its CPU profile. */
  stop(): Promise<void>;
}

export interface NodeProcessOptions {
  name: string;
  /** Script path relative to the repository root. */
  script: string;
  env: NodeJS.ProcessEnv;
  port: number;
  /** Path answered 200 once the process can serve. */
  readyPath: string;
  /** stdout and stderr go here: a drained file costs the process what a log collector's pipe would. */
  logFile: string;
  /** Folder for a `--cpu-prof` profile, when profiling. */
  profileDir?: string;
  /** Runs the process in a memory cgroup of this many MiB, as its deployment does (bench/memory-limit.ts). */
  memoryLimitMb?: number;
}

/** Runs a script with the bench's own Node, as its own process, and waits until it is ready. */
export async function startNodeProcess(options: NodeProcessOptions): Promise<NodeProcess> {
  const flags = options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(options.profileDir, options.name)}`] : [];
  // Node's own diagnostics for the stack's processes (`--trace-gc`, which NODE_OPTIONS refuses).
  flags.push(...(process.env.BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? []));
  const group = options.memoryLimitMb !== undefined ? memoryCgroup(options.name, options.memoryLimitMb) : undefined;
  const command = [process.execPath, ...flags, options.script];
  const out = openSync(options.logFile, 'w');
  // In its group before Node starts: Node reads its limit once, at start, to size its heap.
  const child = group
    ? spawn('/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', group.procs, ...command], { cwd: root, env: options.env, stdio: ['ignore', out, out] })
    : spawn(command[0]!, command.slice(1), { cwd: root, env: options.env, stdio: ['ignore', out, out] });
  closeSync(out);
  live.add(child);
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  void exited.then(() => {
    live.delete(child);
    group?.remove();
  });

  const url = `http://127.0.0.1:${options.port}`;
  try {
    await waitUntilReady(`${url}${options.readyPath}`, exited);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${options.name} did not start: ${(err as Error).message}\n${tail(options.logFile)}`);
  }
  return {
    url,
    pid: child.pid!,
    stop: () => stop(child, exited),
  };
}

/**
 * Runs a script that serves no HTTP of its own (the `worker` role) and waits until its log holds
 * `readyText`.
 */
export async function startLoggingProcess(
  options: Omit<NodeProcessOptions, 'port' | 'readyPath'> & { readyText: string },
): Promise<Omit<NodeProcess, 'url'>> {
  const flags = options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(options.profileDir, options.name)}`] : [];
  // Node's own diagnostics for the stack's processes (`--trace-gc`, which NODE_OPTIONS refuses).
  flags.push(...(process.env.BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? []));
  const out = openSync(options.logFile, 'w');
  const child = spawn(process.execPath, [...flags, options.script], { cwd: root, env: options.env, stdio: ['ignore', out, out] });
  closeSync(out);
  live.add(child);
  let gone = false;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  void exited.then(() => {
    gone = true;
    live.delete(child);
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (tail(options.logFile, 1000).includes(options.readyText)) break;
    if (gone || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${options.name} did not start (${gone ? 'it exited' : 'timed out'})\n${tail(options.logFile)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid: child.pid!,
    stop: () => stop(child, exited),
  };
}

// SIGKILL after 30 s, so a process stuck while draining cannot hold up the rest of the run.
async function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

async function waitUntilReady(readyUrl: string, exited: Promise<void>, timeoutMs = 30_000): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (gone) throw new Error('it exited');
    const ok = await fetch(readyUrl, { signal: AbortSignal.timeout(2000) }).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${readyUrl} not ready after ${timeoutMs} ms`);
}

function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** For an interrupted run: whatever is still running must not outlive the bench. */
export function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
}

export function logFile(dir: string, name: string): string {
  return join(dir, `${name}.log`);
}
