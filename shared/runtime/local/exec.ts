import { spawn } from 'node:child_process';
import { posix } from 'node:path';
import type { ExecRequest, ExecResult } from '../types.ts';
import { runningAsRoot, SANDBOX_ENV, SANDBOX_GID, SANDBOX_UID, WORKSPACE } from './identity.ts';
import { killSession } from './processes.ts';

// One command in a running sandbox: nsenter joins the init's namespaces and becomes the sandbox
// user; it forks once (a pid namespace is only entered by a child), and that child execs the
// command. It is spawned in a session of its own, so the session id names the command's whole
// tree on the host, for a timeout to kill.

export interface ExecTarget {
  nsenter: string;
  /** The sandbox's init, whose namespaces the command joins. */
  pid: number;
  /** The cgroup.procs files of the sandbox's groups (none without cgroups). */
  cgroupProcs: string[];
}

// Once the command has exited, how long its pipes must stay quiet before a background process
// still holding them is taken to be the only writer left.
const DRAIN_MS = 10;

export function execCommandLine(target: ExecTarget, request: ExecRequest): string[] {
  if (request.argv.length === 0) throw new TypeError('argv must name a program');
  const env = request.env ?? {};
  for (const name of Object.keys(env)) {
    if (!/^[^=\0]+$/.test(name)) throw new TypeError(`not an environment variable name: ${JSON.stringify(name)}`);
  }
  const cwd = posix.resolve(WORKSPACE, request.cwd ?? WORKSPACE);
  // Requested variables and directories apply inside, after nsenter has become the sandbox user:
  // given to nsenter, LD_PRELOAD and the like would act on a root process on the host. Without
  // them, nothing is wrapped (an exec less).
  const assignments = Object.entries({ ...SANDBOX_ENV, ...env }).map(([name, value]) => `${name}=${value}`);
  const command =
    Object.keys(env).length > 0 || cwd !== WORKSPACE
      ? ['/usr/bin/env', '-i', '-C', cwd, '--', ...assignments, ...request.argv]
      : request.argv;
  const enter = [
    target.nsenter,
    `--target=${target.pid}`,
    ...['--user', '--mount', '--pid', '--net', '--uts', '--ipc', '--cgroup'],
    // The init's root; the directory is looked up inside, never on the host.
    '--root',
    `--wdns=${WORKSPACE}`,
    // Root becomes the sandbox user; anyone else already is it, as the namespace maps them to it.
    ...(runningAsRoot ? [`--setuid=${SANDBOX_UID}`, `--setgid=${SANDBOX_GID}`] : ['--preserve-credentials']),
    '--',
    ...command,
  ];
  if (target.cgroupProcs.length === 0) return enter;
  // A process joins a cgroup only by being moved there: this shell moves itself before it becomes
  // nsenter, so every process of the command is counted against the sandbox's limits. (The paths
  // are Paddock's own, under validated ids: nothing in them needs quoting.) The shell exports a
  // PWD of its own, which is not the command's to inherit.
  const join = target.cgroupProcs.map((file) => `echo $$ > ${file} && `).join('');
  return ['/bin/sh', '-c', `${join}unset PWD && exec "$@"`, 'sh', ...enter];
}

/** `onStart` learns the pid that leads the command's session, once it is spawned. */
export function runCommand(commandLine: string[], request: ExecRequest, onStart?: (pid: number) => void): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const [program = '', ...args] = commandLine;
    const child = spawn(program, args, { cwd: '/', env: SANDBOX_ENV, detached: true, stdio: 'pipe' });
    if (child.pid !== undefined) onStart?.(child.pid);
    let timedOut = false;
    let exited = false;
    let settled = false;
    let outputSeen = 0;

    // After the exit the pid may be reused, so the session is only killed while it is ours.
    const stop = (): void => {
      if (!exited && child.pid !== undefined) killSession(child.pid).catch(() => undefined);
    };
    const timer = setTimeout(
      () => {
        timedOut = true;
        stop();
      },
      // Past 2^31 - 1 ms, setTimeout would fire at once.
      Math.min(request.timeoutMs, 2 ** 31 - 1),
    );
    request.signal?.addEventListener('abort', stop, { once: true });

    const settle = (finish: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', stop);
      child.stdin.destroy();
      child.stdout.destroy();
      child.stderr.destroy();
      finish();
    };
    const succeed = (exitCode: number | null, signal: NodeJS.Signals | null): void =>
      settle(() => resolve({ exitCode, signal, timedOut, durationMs: performance.now() - started }));

    child.stdout.on('data', (chunk: Buffer) => {
      outputSeen++;
      if (!settled) request.onStdout?.(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      outputSeen++;
      if (!settled) request.onStderr?.(chunk);
    });
    // The command need not read its input, and a pipe the sandbox resets is only the end of its
    // output: neither may become an unhandled 'error' that takes the whole process down.
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream.on('error', () => undefined);
    child.stdin.end(request.stdin);

    child.once('error', (err) => settle(() => reject(err)));
    child.once('close', succeed);
    child.once('exit', (exitCode, signal) => {
      exited = true;
      clearTimeout(timer);
      // A background process (`sleep 100 &`) keeps the pipes open, so 'close' may never come.
      // The timer alone could fire before the loop has read what the command wrote; the
      // setImmediate after it runs once the loop has polled the pipes.
      const whenQuiet = (): void => {
        const seen = outputSeen;
        setTimeout(() => setImmediate(() => (outputSeen === seen ? succeed(exitCode, signal) : whenQuiet())), DRAIN_MS);
      };
      whenQuiet();
    });
  });
}
