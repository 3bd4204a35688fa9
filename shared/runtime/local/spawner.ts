import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ExecRequest, ExecResult } from '../types.ts';
import { killSession } from './processes.ts';
import type { FromSpawner, ToSpawner } from './spawner-protocol.ts';

const MAIN = fileURLToPath(new URL('./spawner-main.ts', import.meta.url));
const CLOSE_GRACE_MS = 2000;

interface Pending {
  request: ExecRequest;
  pid?: number;
  resolve(result: ExecResult): void;
  reject(err: Error): void;
}

/**
 * Runs commands (runCommand's) from a small Node process of the runtime's own. Node spawns with
 * fork(), which copies the page tables of the process that forks: measured here, /bin/true took
 * 2.1 ms to spawn from a Node process of 57 MB, 13 ms from one of 216 MB and 33 ms from one of
 * 584 MB, and an API process is well past 150 MB. It is CPU time too, on every exec and file call.
 * The spawner starts on the first command and again after it dies; commands it was running when
 * it died fail, and their processes are killed.
 */
export class CommandSpawner {
  private ready: Promise<ChildProcess> | undefined;
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** run() calls not yet settled, including those waiting for the spawner to start. */
  private busy = 0;

  async run(commandLine: string[], request: ExecRequest): Promise<ExecResult> {
    this.busy++;
    this.refresh();
    try {
      const child = await this.start();
      return await new Promise<ExecResult>((resolve, reject) => {
        const id = this.nextId++;
        const abort = () => post(child, { type: 'abort', id });
        const settle = () => {
          request.signal?.removeEventListener('abort', abort);
          this.pending.delete(id);
        };
        this.pending.set(id, {
          request,
          resolve: (result) => (settle(), resolve(result)),
          reject: (err) => (settle(), reject(err)),
        });
        post(child, { type: 'run', id, commandLine, timeoutMs: request.timeoutMs, stdin: request.stdin });
        request.signal?.addEventListener('abort', abort, { once: true });
        if (request.signal?.aborted) abort();
      });
    } finally {
      this.busy--;
      this.refresh();
    }
  }

  /** Stops the spawner: the commands it runs are killed and their calls fail. A later run starts another. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.ref();
    if (child.connected) child.disconnect(); // the spawner kills what it runs, then exits
    const timer = setTimeout(() => child.kill('SIGKILL'), CLOSE_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }

  private start(): Promise<ChildProcess> {
    this.ready ??= new Promise<ChildProcess>((resolve, reject) => {
      // None of the parent's environment (it holds the API's secrets): the spawner needs none, and
      // gives its commands the sandbox's own.
      const child = fork(MAIN, [], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        execArgv: [],
        serialization: 'advanced',
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      this.child = child;
      child.on('message', (message: FromSpawner) => {
        if (message.type === 'ready') resolve(child);
        else this.receive(message);
      });
      child.once('error', (err) => this.lost(child, err, reject));
      child.once('exit', (code, signal) => this.lost(child, new Error(`the command spawner exited (${signal ?? `code ${code}`})`), reject));
      this.refresh();
    });
    return this.ready;
  }

  private receive(message: Exclude<FromSpawner, { type: 'ready' }>): void {
    const entry = this.pending.get(message.id);
    if (!entry) return;
    switch (message.type) {
      case 'started':
        entry.pid = message.pid;
        break;
      case 'stdout':
        entry.request.onStdout?.(message.data);
        break;
      case 'stderr':
        entry.request.onStderr?.(message.data);
        break;
      case 'done':
        entry.resolve(message.result);
        break;
      case 'failed':
        entry.reject(new Error(message.message));
        break;
    }
  }

  /** The spawner died (or could not start): its commands fail, and the next one starts another. */
  private lost(child: ChildProcess, err: Error, rejectStart: (err: Error) => void): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.ready = undefined;
    rejectStart(err);
    for (const entry of [...this.pending.values()]) {
      // Its commands outlive it (each leads a session of its own): nothing would read or stop them.
      if (entry.pid !== undefined) void killSession(entry.pid).catch(() => undefined);
      entry.reject(err);
    }
  }

  /** Only a spawner with work keeps the event loop alive: an idle one must not hold a process open. */
  private refresh(): void {
    const child = this.child;
    if (!child) return;
    const channel = child.channel as { ref(): void; unref(): void } | null | undefined;
    if (this.busy > 0) {
      child.ref();
      channel?.ref();
    } else {
      child.unref();
      channel?.unref();
    }
  }
}

function post(child: ChildProcess, message: ToSpawner): void {
  // A send to a spawner that has just died fails; 'exit' fails the calls.
  if (child.connected) child.send(message, undefined, undefined, () => undefined);
}
