import { createInterface } from 'node:readline';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../../shared/config.ts';
import { readStat } from '../../shared/runtime/local/processes.ts';

const root = resolve(import.meta.dirname, '../..');

/** The environment that reproduces a parsed config: its keys are the variable names. */
export function envOf(config: Config, kubeConfig?: KubeConfig): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  for (const [k, v] of Object.entries(config)) if (v !== undefined) env[k] = String(v);
  if (kubeConfig) {
    const file = join(mkdtempSync(join(tmpdir(), 'paddock-kube-')), 'config');
    writeFileSync(file, kubeConfig.exportConfig(), { mode: 0o600 });
    env.KUBECONFIG = file;
  }
  return env;
}

/** Starts a Procfile role (`api/main.ts`, `workers/main.ts`) as a real process. */
export function startRole(script: string, env: NodeJS.ProcessEnv): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, ['--import', join(root, 'test/helpers/die-with-parent.ts'), script], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  child.channel?.unref(); // nor does it keep the test process alive
  // Whole lines only, each stream's own (as scripts/dev-stack.ts relays them): a pipe read can end
  // mid-line, and the other stream's chunk landing there split a JSON log line into a "stray" one
  // (a loaded CI run).
  let output = '';
  for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', (line) => (output += `${line}\n`));
  return Object.assign(child, { output: () => output });
}

export function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((done) => child.once('exit', (code, signal) => done({ code, signal })));
}

/**
 * The host's processes, zombies left out, with their parents and arguments: read synchronously
 * from /proc, so that a sampler on a short interval sees one whole listing at a time.
 */
export function hostProcesses(): { pid: number; ppid: number; args: string[] }[] {
  const found = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    const pid = Number(name);
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue; // gone
    }
    const stat = readStat(pid);
    if (stat && stat.state !== 'Z' && args.length > 0) found.push({ pid, ppid: stat.ppid, args });
  }
  return found;
}

/**
 * A `sleep` argument no other process on the host uses: both runtimes' runs of a file look at the
 * same host's processes at once, and a sleep an earlier run left behind must not be taken for one
 * of this run's.
 */
export const sleepMark = (seconds: number) => `${seconds}.${process.pid}`;
