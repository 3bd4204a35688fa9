import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isStdinStream, type ExecRequest, type ExecResult, type TerminalRequest, type TerminalSession } from '../types.ts';
import { killGroup, type GroupKill } from './cgroups.ts';
import { killQuietly, killSession } from './processes.ts';
import type { FromSpawner, OutputStreamName, ToSpawner } from './spawner-protocol.ts';
import type { Launched, LaunchRequest } from './launch.ts';
import { PermanentRuntimeError } from '../types.ts';
import { StdinSender } from './stdin-sender.ts';
import { bytesMoved } from '../../reclaim.ts';

const MAIN = fileURLToPath(new URL('./spawner-main.ts', import.meta.url));
const CLOSE_GRACE_MS = 2000;
/** A host command of the runtime's own (mkfs.ext4 on a busy host included) ends within this. */
const HOST_COMMAND_TIMEOUT_MS = 120_000;
/** After the spawner exits, its channel's last messages are awaited this long. */
const EXIT_DRAIN_MS = 1_000;
/** Of a failed host command's stderr, this much is kept for its error. */
const HOST_STDERR_BYTES = 4096;

/** A host command failed: `stderr` says why, as on execFile's errors. */
export class HostCommandError extends Error {
  readonly stderr: string;
  readonly exitCode: number | null;

  constructor(message: string, stderr: string, exitCode: number | null) {
    super(message);
    this.stderr = stderr;
    this.exitCode = exitCode;
  }
}

/** The spawner exited (or could not start) while a command was in its hands. */
export class SpawnerGoneError extends Error {}

/**
 * Runs a short host command (`file` looked up on the PATH) to its end: what it printed (its first
 * HOST_STDERR_BYTES); rejects with HostCommandError unless it exits 0.
 */
export type HostCommand = (file: string, args: string[]) => Promise<{ stdout: string }>;

interface Pending {
  request: ExecRequest;
  pid?: number;
  killer?: GroupKill;
  stdin?: StdinSender;
  /** The streamed stdin failed: the command is stopped, and the call rejects with this. */
  stdinFailure?: Error;
  resolve(result: ExecResult): void;
  reject(err: Error): void;
}

interface PendingTerminal {
  request: TerminalRequest;
  pid?: number;
  killer?: GroupKill;
  /** Writes waiting for the spawner to have passed them on, oldest first. */
  inputs: (() => void)[];
  /** Resizes waiting for the size to be set, oldest first. */
  resizes: (() => void)[];
  opened(): void;
  resolve(result: { exitCode: number | null; signal: string | null }): void;
  reject(err: Error): void;
}

type Exit = { exitCode: number | null; signal: string | null };

interface PendingLaunch {
  /** The init's pid, once bubblewrap holds it. */
  pid?: number;
  held(pid: number): void;
  resolve(launched: Launched): void;
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
  private readonly terminals = new Map<number, PendingTerminal>();
  private readonly launches = new Map<number, PendingLaunch>();
  private nextId = 1;
  /** run() calls not yet settled, including those waiting for the spawner to start. */
  private busy = 0;

  async run(commandLine: string[], request: ExecRequest, extra: { frame?: Uint8Array; killer?: GroupKill } = {}): Promise<ExecResult> {
    this.busy++;
    this.refresh();
    try {
      const child = await this.start();
      return await new Promise<ExecResult>((resolve, reject) => {
        const id = this.nextId++;
        const abort = () => post(child, { type: 'abort', id });
        const stream = isStdinStream(request.stdin) ? request.stdin : undefined;
        const stdin = stream
          ? new StdinSender(
              stream,
              (data) => post(child, { type: 'stdin', id, data }),
              () => post(child, { type: 'stdin-end', id }),
            )
          : undefined;
        const settle = () => {
          request.signal?.removeEventListener('abort', abort);
          stdin?.stop();
          this.pending.delete(id);
        };
        const entry: Pending = {
          request,
          killer: extra.killer,
          stdin,
          resolve: (result) => (settle(), entry.stdinFailure ? reject(entry.stdinFailure) : resolve(result)),
          reject: (err) => (settle(), reject(err)),
        };
        this.pending.set(id, entry);
        const whole = stream ? undefined : (request.stdin as Uint8Array | undefined);
        post(child, { type: 'run', id, commandLine, frame: extra.frame, timeoutMs: request.timeoutMs, stdin: whole, stdinStream: !!stream, killer: extra.killer });
        request.signal?.addEventListener('abort', abort, { once: true });
        if (request.signal?.aborted) abort();
        stdin?.run().catch((err: unknown) => {
          entry.stdinFailure = err instanceof Error ? err : new Error(String(err));
          abort();
        });
      });
    } finally {
      this.busy--;
      this.refresh();
    }
  }

  /**
   * Opens a terminal (terminal.ts's runTerminal in the spawner). Resolves once it is started;
   * its exit settles when the command has ended and everything it started is killed.
   */
  async terminal(commandLine: string[], request: TerminalRequest, extra: { frame: Uint8Array; killer?: GroupKill }): Promise<TerminalSession> {
    this.busy++;
    this.refresh();
    let child: ChildProcess;
    try {
      child = await this.start();
    } catch (err) {
      this.busy--;
      this.refresh();
      throw err;
    }
    const id = this.nextId++;
    const close = () => post(child, { type: 'terminal-close', id });
    let opened!: () => void;
    const started = new Promise<void>((resolve) => (opened = resolve));
    const exit = new Promise<Exit>((resolve, reject) => {
      this.terminals.set(id, { request, killer: extra.killer, inputs: [], resizes: [], opened, resolve, reject });
    }).finally(() => {
      request.signal?.removeEventListener('abort', close);
      this.terminals.delete(id);
      this.busy--;
      this.refresh();
    });
    exit.catch(() => undefined);
    post(child, { type: 'terminal-open', id, commandLine, frame: extra.frame, killer: extra.killer });
    request.signal?.addEventListener('abort', close, { once: true });
    if (request.signal?.aborted) close();
    await Promise.race([started, exit]);
    return {
      exit,
      write: (data) =>
        new Promise<void>((resolve) => {
          const entry = this.terminals.get(id);
          if (!entry || !child.connected) return resolve();
          entry.inputs.push(resolve);
          post(child, { type: 'terminal-input', id, data });
        }),
      resize: (cols, rows) =>
        new Promise<void>((resolve) => {
          const entry = this.terminals.get(id);
          if (!entry || !child.connected) return resolve();
          entry.resizes.push(resolve);
          post(child, { type: 'terminal-resize', id, cols, rows });
        }),
    };
  }

  /**
   * One of the runtime's own host commands (a disk's truncate, mkfs.ext4, mount and umount, the
   * devpts mount, the `rm` of a destroyed sandbox's files): from the spawner too, so that the
   * process creating and destroying sandboxes, a worker, does not fork for them.
   */
  readonly host: HostCommand = async (file, args) => {
    const stdout = firstBytes(HOST_STDERR_BYTES);
    const stderr = firstBytes(HOST_STDERR_BYTES);
    const result = await this.run([file, ...args], {
      argv: [file, ...args],
      timeoutMs: HOST_COMMAND_TIMEOUT_MS,
      onStdout: stdout.add,
      onStderr: stderr.add,
    });
    if (result.exitCode === 0) return { stdout: stdout.text() };
    const how = result.timedOut ? `did not finish within ${HOST_COMMAND_TIMEOUT_MS / 1000} s` : result.exitCode === null ? `was ended by ${result.signal}` : `exited with ${result.exitCode}`;
    throw new HostCommandError(`${file} ${how}`, stderr.text(), result.exitCode);
  };

  /**
   * Starts a sandbox's init from the spawner (launch.ts), so that the process creating sandboxes
   * does not fork for it. `beforeStart`, if any, runs here, in this process, while the init is held
   * (in its groups already: `request.admitTo`); should it fail, the init and bubblewrap are killed
   * and the call rejects with its error once they are.
   */
  async launch(request: LaunchRequest, beforeStart?: (pid: number) => Promise<void>): Promise<Launched> {
    this.busy++;
    this.refresh();
    try {
      const child = await this.start();
      const id = this.nextId++;
      let ownFailure: Error | undefined;
      return await new Promise<Launched>((resolve, reject) => {
        const entry: PendingLaunch = {
          held: (pid) => {
            entry.pid = pid;
            // Relayed only when there is a beforeStart.
            beforeStart?.(pid).then(
              () => post(child, { type: 'launch-go', id }),
              (err: unknown) => {
                ownFailure = err instanceof Error ? err : new Error(String(err));
                post(child, { type: 'launch-stop', id, message: ownFailure.message });
              },
            );
          },
          resolve: (launched) => (this.launches.delete(id), resolve(launched)),
          reject: (err) => (this.launches.delete(id), reject(ownFailure ?? err)),
        };
        this.launches.set(id, entry);
        post(child, { type: 'launch', id, request: { ...request, relay: beforeStart !== undefined } });
      });
    } finally {
      this.busy--;
      this.refresh();
    }
  }

  /** Starts the spawner ahead of its first command; idle, it holds no process open. */
  async warm(): Promise<void> {
    await this.start();
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
        else if (child === this.child) this.receive(message);
        // A command it started as it died, told of past the wait below: nothing reads or stops it.
        else if (message.type === 'started') void killSession(message.pid).catch(() => undefined);
      });
      child.once('error', (err) => this.lost(child, err, reject));
      child.once('exit', (code, signal) => {
        const gone = () => this.lost(child, new Error(`the command spawner exited (${signal ?? `code ${code}`})`), reject);
        if (!child.connected) return gone();
        // 'exit' can come before the channel's last messages are read, a command's pid among
        // them; without it that command would be left running. They all come before 'disconnect'.
        const timer = setTimeout(gone, EXIT_DRAIN_MS);
        child.once('disconnect', () => (clearTimeout(timer), gone()));
      });
      this.refresh();
    });
    return this.ready;
  }

  private receive(message: Exclude<FromSpawner, { type: 'ready' }>): void {
    const launch = this.launches.get(message.id);
    if (launch) {
      if (message.type === 'launch-held') launch.held(message.pid);
      else if (message.type === 'launch-ready') launch.resolve(message.launched);
      else if (message.type === 'launch-failed') launch.reject(message.permanent ? new PermanentRuntimeError(message.message) : new Error(message.message));
      return;
    }
    const terminal = this.terminals.get(message.id);
    if (terminal) return this.receiveTerminal(message.id, terminal, message);
    const entry = this.pending.get(message.id);
    if (!entry) return;
    switch (message.type) {
      case 'started':
        entry.pid = message.pid;
        break;
      case 'stdout':
      case 'stderr':
        this.deliver(message.id, entry, message.type, message.data);
        break;
      case 'stdin-ack':
        entry.stdin?.acknowledge(message.bytes);
        break;
      case 'done':
        entry.resolve(message.result);
        break;
      case 'failed':
        entry.reject(new Error(message.message));
        break;
    }
  }

  private receiveTerminal(id: number, entry: PendingTerminal, message: Exclude<FromSpawner, { type: 'ready' }>): void {
    switch (message.type) {
      case 'started':
        entry.pid = message.pid;
        entry.opened();
        break;
      case 'terminal-output': {
        const taken = entry.request.onOutput(message.data);
        const ack = () => {
          if (this.child && this.terminals.has(id)) post(this.child, { type: 'terminal-ack', id, bytes: message.data.byteLength });
        };
        if (taken instanceof Promise) void taken.then(ack, ack);
        else ack();
        break;
      }
      case 'terminal-input-taken':
        entry.inputs.shift()?.();
        break;
      case 'terminal-resized':
        entry.resizes.shift()?.();
        break;
      case 'terminal-exit':
        for (const taken of [...entry.inputs.splice(0), ...entry.resizes.splice(0)]) taken();
        entry.resolve({ exitCode: message.exitCode, signal: message.signal });
        break;
      case 'failed':
        for (const taken of [...entry.inputs.splice(0), ...entry.resizes.splice(0)]) taken();
        entry.reject(new Error(message.message));
        break;
    }
  }

  /** Hands output to the consumer, and tells the spawner once the consumer has taken it. */
  private deliver(id: number, entry: Pending, stream: OutputStreamName, data: Uint8Array): void {
    bytesMoved(data.byteLength);
    const consume = stream === 'stdout' ? entry.request.onStdout : entry.request.onStderr;
    const taken = consume?.(data);
    const ack = () => {
      if (this.child && this.pending.has(id)) post(this.child, { type: 'ack', id, stream, bytes: data.byteLength });
    };
    if (taken instanceof Promise) void taken.then(ack, ack);
    else ack();
  }

  /** The spawner died (or could not start): its commands fail, and the next one starts another. */
  private lost(child: ChildProcess, cause: Error, rejectStart: (err: Error) => void): void {
    const err = cause instanceof SpawnerGoneError ? cause : new SpawnerGoneError(cause.message);
    if (this.child !== child) return;
    this.child = undefined;
    this.ready = undefined;
    rejectStart(err);
    for (const entry of [...this.pending.values()]) {
      // Its commands outlive it (each leads a session of its own): nothing would read or stop them.
      if (entry.killer) void killGroup(entry.killer);
      else if (entry.pid !== undefined) void killSession(entry.pid).catch(() => undefined);
      entry.reject(err);
    }
    for (const entry of [...this.launches.values()]) {
      // A held init never runs; one let go runs on, and the create's cleanup ends it.
      if (entry.pid !== undefined) killQuietly(entry.pid);
      entry.reject(err);
    }
    for (const entry of [...this.terminals.values()]) {
      if (entry.killer) void killGroup(entry.killer);
      else if (entry.pid !== undefined) void killSession(entry.pid).catch(() => undefined);
      for (const taken of [...entry.inputs.splice(0), ...entry.resizes.splice(0)]) taken();
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

/** The first `max` bytes of a stream, as text. */
function firstBytes(max: number): { add(chunk: Uint8Array): void; text(): string } {
  const kept: Buffer[] = [];
  let seen = 0;
  return {
    add: (chunk) => {
      if (seen < max) kept.push(Buffer.from(chunk).subarray(0, max - seen));
      seen += chunk.byteLength;
    },
    text: () => Buffer.concat(kept).toString('utf8'),
  };
}
