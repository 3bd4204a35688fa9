import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { ExecResult } from '../types.ts';

// A command of Paddock's own run on the host beside a sandbox (runtime.ts, execBeside: the
// snapshot's copy of a workspace, which then has the host's CPUs rather than the sandbox's one).
// Never a tenant's command: what it runs is Paddock's, its environment only what is given, and it
// ends, its whole process group with it, at its timeout or abort.

export interface HostCommand {
  argv: string[];
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  onStdout?: (chunk: Uint8Array) => void | Promise<void>;
  /** Its stdout this descriptor, in place of onStdout. */
  stdoutFd?: number;
  /** Its stdin this descriptor; else none. */
  stdinFd?: number;
  onStderr?: (chunk: Uint8Array) => void | Promise<void>;
}

/** The command's output read at its consumer's pace: a returned promise pauses the stream until it settles. */
function readInto(stream: Readable, consume: ((chunk: Uint8Array) => void | Promise<void>) | undefined): Promise<void> {
  return new Promise((resolve) => {
    stream.on('data', (chunk: Buffer) => {
      const held = consume?.(chunk);
      if (!held) return;
      stream.pause();
      void held.then(
        () => stream.resume(),
        () => stream.destroy(),
      );
    });
    stream.once('close', resolve);
    stream.on('error', () => undefined);
  });
}

export function runOnHost(command: HostCommand): Promise<ExecResult> {
  const started = performance.now();
  if (command.signal?.aborted) return Promise.resolve({ exitCode: null, signal: 'SIGKILL', timedOut: false, durationMs: 0 });
  const child = spawn(command.argv[0]!, command.argv.slice(1), { cwd: '/', env: command.env, stdio: [command.stdinFd ?? 'ignore', command.stdoutFd ?? 'pipe', 'pipe'], detached: true });
  let timedOut = false;
  const killGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, command.timeoutMs);
  command.signal?.addEventListener('abort', killGroup, { once: true });
  const outputs = Promise.all([child.stdout ? readInto(child.stdout, command.onStdout) : undefined, readInto(child.stderr!, command.onStderr)]);
  return new Promise((resolve, reject) => {
    child.once('error', (err) => {
      clearTimeout(timer);
      command.signal?.removeEventListener('abort', killGroup);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      command.signal?.removeEventListener('abort', killGroup);
      // What the group's other processes still hold ends with them.
      killGroup();
      void outputs.then(() => resolve({ exitCode: code, signal, timedOut, durationMs: performance.now() - started }));
    });
  });
}
