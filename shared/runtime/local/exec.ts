import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { posix } from 'node:path';
import type { Writable } from 'node:stream';
import { drained } from '../../drained.ts';
import { isStdinStream, type ExecRequest, type ExecResult, type ExecStdin } from '../types.ts';
import { killGroup, type GroupKill } from './cgroups.ts';
import { armDeadline } from './deadline.ts';
import { runningAsRoot, SANDBOX_ENV, SANDBOX_GID, SANDBOX_UID, WORKSPACE } from './identity.ts';
import { encodeFrame, READER, type Frame } from '../exec-frame.ts';
import { killQuietly, killSession } from './processes.ts';
import { bytesMoved } from '../../reclaim.ts';

// One command in a running sandbox: nsenter joins the init's namespaces and becomes the sandbox
// user; it forks once (a pid namespace is only entered by a child), and that child reads the
// command from its descriptor 3 and execs it. Its first process joins a cgroup of its own, which
// a timeout kills whole; without cgroups it is spawned in a session of its own, so the session id
// names the command's tree on the host.

export interface ExecTarget {
  nsenter: string;
  /** The sandbox's init, whose namespaces the command joins. */
  pid: number;
  /** The cgroup.procs files of the sandbox's limit groups and of the command's own group (none without cgroups). */
  cgroupProcs: string[];
}

// Once the command has exited, how long its pipes must stay quiet before a background process
// still holding them is taken to be the only writer left.
const DRAIN_MS = 10;

/**
 * The host command line of one exec: fixed text and Paddock's own paths only. The command itself
 * (argv, working directory, environment) travels on descriptor 3 as encodeFrame's frame, read
 * inside the sandbox by READER, after nsenter has become the sandbox user: given to nsenter,
 * LD_PRELOAD and the like would act on a root process on the host, and on its command line the
 * environment (the secrets) would be on view to every host user.
 */
export function execCommandLine(target: ExecTarget): string[] {
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
    '/bin/sh',
    '-c',
    READER,
    'paddock-exec',
  ];
  if (target.cgroupProcs.length === 0) return enter;
  // A process joins a cgroup only by being moved there: this shell moves itself before it becomes
  // nsenter, so every process of the command is counted against the sandbox's limits and is in the
  // command's own group, which a timeout kills whole. (The paths are Paddock's own, under
  // validated ids: nothing in them needs quoting.) The shell exports a PWD of its own, which is not
  // the command's to inherit.
  const join = target.cgroupProcs.map((file) => `echo $$ > ${file} && `).join('');
  return ['/bin/sh', '-c', `${join}unset PWD && exec "$@"`, 'sh', ...enter];
}

/** What runs: argv as given, the working directory inside the sandbox, the sandbox's environment plus the request's. */
export function execCommand(request: Pick<ExecRequest, 'argv' | 'cwd' | 'env'>): Frame {
  const cwd = posix.resolve(WORKSPACE, request.cwd ?? WORKSPACE);
  return { argv: request.argv, cwd, env: { ...SANDBOX_ENV, ...request.env } };
}

/** The frame execCommandLine's command reads on descriptor 3. */
export function execFrame(request: Pick<ExecRequest, 'argv' | 'cwd' | 'env'>): Buffer {
  return encodeFrame(execCommand(request));
}

export interface RunOptions {
  /** Written to the command's descriptor 3, then closed (see execFrame). */
  frame?: Uint8Array;
  /** A stream is written as the pipe takes it (see ExecStdin). */
  stdin?: ExecStdin;
  timeoutMs: number;
  /** Aborting kills the command's whole process tree, as a timeout does. */
  signal?: AbortSignal;
  /** A returned promise holds the stream: no more of it is read until it settles. */
  onStdout?: (chunk: Uint8Array) => void | Promise<void>;
  onStderr?: (chunk: Uint8Array) => void | Promise<void>;
  /** The command's own cgroup: a timeout ends every process in it. Without it, its session. */
  killer?: GroupKill;
}

/** `onStart` learns the pid that leads the command's session, once it is spawned. */
export function runCommand(commandLine: string[], request: RunOptions, onStart?: (pid: number) => void): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const [program = '', ...args] = commandLine;
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(program, args, {
        cwd: '/',
        env: SANDBOX_ENV,
        detached: true,
        stdio: request.frame ? ['pipe', 'pipe', 'pipe', 'pipe'] : 'pipe',
      }) as ChildProcessWithoutNullStreams;
    } catch (err) {
      // Out of descriptors (EMFILE) or processes: this command fails, nothing else does.
      reject(err as Error);
      return;
    }
    // The pipes are made before the fork: without them (EMFILE) the spawn has failed, and its
    // 'error' says so; nothing may touch the missing streams meanwhile.
    if (!child.stdout || !child.stderr || !child.stdin) {
      child.once('error', (err) => reject(err));
      return;
    }
    if (child.pid !== undefined) onStart?.(child.pid);
    let exited = false;
    let settled = false;
    let outputSeen = 0;
    let held = 0;
    let stdinFailure: Error | undefined;

    // The command's cgroup holds every process it made, whatever they did to their session: it is
    // the whole kill, with no look at the host's process table. Without one, its session. After
    // the exit the pid may be reused, so the session is only killed while it is ours.
    // A stopped command answers once the kill is done: its processes no longer run, nor hold a
    // place under the sandbox's process limit, when the caller learns it timed out.
    let stopping: Promise<void> | undefined;
    const stop = (): void => {
      // Until its first process has moved itself into its group (slow on a loaded host), the
      // command is that one process, leading the process group spawn gave it: killed first, it
      // either never joins, or has joined and is found in the group with all it started since.
      if (request.killer && !exited && child.pid !== undefined) killQuietly(-child.pid);
      if (request.killer) stopping ??= killGroup(request.killer);
      else if (!exited && child.pid !== undefined) stopping ??= killSession(child.pid).catch(() => undefined);
    };
    const deadline = armDeadline(request, stop);

    const settle = (finish: () => void): void => {
      if (settled) return;
      settled = true;
      deadline.disarm();
      for (const stream of child.stdio) stream?.destroy();
      finish();
    };
    const succeed = (exitCode: number | null, signal: NodeJS.Signals | null): void =>
      settle(() => {
        const result = { exitCode, signal, timedOut: deadline.timedOut, durationMs: performance.now() - started };
        const answer = () => (stdinFailure ? reject(stdinFailure) : resolve(result));
        if (stopping) void stopping.then(answer);
        else answer();
      });

    const forward = (stream: NodeJS.ReadableStream, to: RunOptions['onStdout']) => {
      stream.on('data', (chunk: Buffer) => {
        bytesMoved(chunk.length);
        outputSeen++;
        if (settled) return;
        const wait = to?.(chunk);
        if (!(wait instanceof Promise)) return;
        held++;
        stream.pause();
        const release = () => {
          held--;
          outputSeen++;
          if (!settled) stream.resume();
        };
        void wait.then(release, release);
      });
    };
    forward(child.stdout, request.onStdout);
    forward(child.stderr, request.onStderr);
    // The command need not read its input, and a pipe the sandbox resets is only the end of its
    // output: neither may become an unhandled 'error' that takes the whole process down.
    for (const stream of child.stdio) stream?.on('error', () => undefined);
    if (isStdinStream(request.stdin)) {
      void feed(request.stdin, child.stdin, () => settled).catch((err: unknown) => {
        // A source that failed must not reach the command as a complete input: it is stopped.
        stdinFailure = err instanceof Error ? err : new Error(String(err));
        stop();
      });
    } else {
      child.stdin.end(request.stdin);
    }
    (child.stdio[3] as Writable | undefined)?.end(request.frame);

    child.once('error', (err) => settle(() => reject(err)));
    child.once('close', succeed);
    child.once('exit', (exitCode, signal) => {
      exited = true;
      deadline.exited();
      // A background process (`sleep 100 &`) keeps the pipes open, so 'close' may never come.
      // The timer alone could fire before the loop has read what the command wrote; the
      // setImmediate after it runs once the loop has polled the pipes. A stream held by its
      // reader is not quiet (unless the command was stopped: then the rest is not waited for).
      const whenQuiet = (): void => {
        const seen = outputSeen;
        setTimeout(
          () =>
            setImmediate(() =>
              outputSeen === seen && (held === 0 || request.signal?.aborted) ? succeed(exitCode, signal) : whenQuiet(),
            ),
          DRAIN_MS,
        );
      };
      whenQuiet();
    });
  });
}

/**
 * Writes a streamed stdin to the command's pipe as the pipe takes it. It stops reading the source
 * (and returns its iterator) once the command is done or has closed its stdin; it ends the pipe
 * only at the source's end. It rejects with the source's error.
 */
async function feed(source: AsyncIterable<Uint8Array>, pipe: Writable, done: () => boolean): Promise<void> {
  const chunks = source[Symbol.asyncIterator]();
  const open = () => !done() && pipe.writable && !pipe.destroyed;
  try {
    while (open()) {
      const next = await chunks.next();
      if (next.done) {
        if (open()) pipe.end();
        return;
      }
      if (!open()) break;
      if (!pipe.write(next.value)) await drained(pipe);
    }
  } catch (err) {
    if (!done()) throw err;
    return;
  }
  await chunks.return?.();
}

