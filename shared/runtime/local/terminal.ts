import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { killGroup, type GroupKill } from './cgroups.ts';
import { SANDBOX_ENV } from './identity.ts';
import { killQuietly, killSession } from './processes.ts';
import type { HostCommand } from './spawner.ts';
import { bytesMoved } from '../../reclaim.ts';

// A terminal in a running sandbox: exec's path in (nsenter, the sandbox user, a cgroup of its
// own, the command framed on descriptor 3), and then socat, which opens a pseudo-terminal of the
// sandbox's own devpts and runs the command on it in a session of its own, the terminal its
// controlling terminal. Node cannot open a pseudo-terminal without a native addon, and the sandbox
// sees the host's /usr. Not util-linux script: it reads its input whatever the terminal takes, and
// keeps the rest in memory, so a flood of keystrokes into a program that reads none grows it
// without bound; socat moves at most one buffer at a time each way, so the flood waits in the
// pipes and, hop by hop, in the client's socket.
//
// socat's standard input and output are plain pipes: keystrokes go in as they are, the
// terminal's output (the command's stdout and stderr together, as on any terminal) comes out.
// A resize travels on descriptor 4 as "COLS ROWS" lines to a small reader inside the terminal's
// session, which sets the size with stty (the kernel then sends SIGWINCH to the foreground group)
// and answers each line with one on descriptor 6 once it is set: keystrokes sent after a resize
// wait for that, so the command reads them at the size they were typed at. The reader starts
// only after the wrapper has set the first size: a resize sent as the terminal opens (xterm.js's
// fit addon sends one) is applied after it, never overwritten by it. socat does not pass the
// command's exit status on, so the wrapper writes it on descriptor 5.

/** The environment variable that carries the wrapper to socat's shell (unset before the command runs). */
const WRAPPER_VAR = 'PADDOCK_TERMINAL';

const quote = (word: string): string => `'${word.replaceAll("'", "'\\''")}'`;

/**
 * The argv exec's reader runs, and the one variable to add to the command's environment: socat
 * runs its command with /bin/sh -c, and the wrapper travels in the environment rather than in
 * socat's address, whose syntax gives commas and colons meanings of their own.
 */
export function terminalCommand(socat: string, argv: readonly string[], cols: number, rows: number): { argv: string[]; env: Record<string, string> } {
  const wrapper = [
    `unset ${WRAPPER_VAR}`,
    'exec 8<&0',
    `stty sane cols ${Math.trunc(cols)} rows ${Math.trunc(rows)}`,
    '(while read -r c r <&4; do stty cols "$c" rows "$r" <&8; echo >&6; done) >/dev/null 2>&1 5>&- &',
    'exec 4<&- 6>&- 8<&-',
    // Caught, not ignored, so Ctrl-C does not end the wrapper and the command gets the default.
    "trap ':' INT QUIT",
    `${argv.map(quote).join(' ')} 5>&-`,
    'status=$?',
    'echo "$status" >&5',
    'exit "$status"',
  ].join('\n');
  return {
    // socat takes the single quotes off and keeps the double ones, which keep the newlines.
    argv: [socat, '-b', '4096', 'STDIO', `SYSTEM:eval '"$${WRAPPER_VAR}"',pty,setsid,ctty,stderr`],
    env: { [WRAPPER_VAR]: wrapper },
  };
}

/**
 * Mounts a devpts instance of the sandbox's own on its /dev/pts (bwrap-args.ts makes the
 * directory and the /dev/ptmx link), from the host's root in the sandbox's mount namespace only:
 * the sandbox user has no capability to mount anything. Its terminals are then invisible to the
 * host's and to every other sandbox's.
 */
export async function mountPts(run: HostCommand, nsenter: string, mount: string, pid: number): Promise<void> {
  await run(nsenter, [`--target=${pid}`, '--mount', '--', mount, '-t', 'devpts', '-o', 'newinstance,ptmxmode=0666,mode=0620,nosuid,noexec', 'devpts', '/dev/pts']);
}

export interface TerminalRun {
  write(data: Uint8Array, done: () => void): void;
  /** `done` runs once the size is set (or the terminal is over). */
  resize(cols: number, rows: number, done: () => void): void;
  /** Kills the whole command (the end of the terminal); `exit` settles once it is done. */
  stop(): void;
}

export interface TerminalRunOptions {
  frame: Uint8Array;
  killer?: GroupKill;
  /** A returned promise holds the output: nothing more is read until it settles. */
  onOutput(chunk: Uint8Array): void | Promise<void>;
  onExit(result: { exitCode: number | null; signal: string | null }): void;
  onError(err: Error): void;
}

/** Starts the terminal's host-side command (the spawner runs this); `onStart` learns its session's leader. */
export function runTerminal(commandLine: string[], options: TerminalRunOptions, onStart?: (pid: number) => void): TerminalRun {
  const [program = '', ...args] = commandLine;
  let child: ChildProcess;
  try {
    child = spawn(program, args, { cwd: '/', env: SANDBOX_ENV, detached: true, stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'] });
  } catch (err) {
    queueMicrotask(() => options.onError(err as Error));
    return { write: (_data, done) => done(), resize: (_cols, _rows, done) => done(), stop: () => undefined };
  }
  const [stdin, stdout, stderr, frame, control, status, applied] = child.stdio as unknown as [Writable, Readable, Readable, Writable, Writable, Readable, Readable];
  // One waiting callback per resize line sent, answered in order by the reader's lines.
  const resizing: (() => void)[] = [];
  const resized = () => {
    for (const done of resizing.splice(0)) done();
  };
  applied.on('data', (chunk: Buffer) => {
    for (let at = chunk.indexOf(10); at !== -1 && resizing.length > 0; at = chunk.indexOf(10, at + 1)) resizing.shift()!();
  });
  applied.once('close', resized);
  let reported = '';
  status.on('data', (chunk: Buffer) => (reported = (reported + chunk.toString('latin1')).slice(-16)));
  if (child.pid !== undefined) onStart?.(child.pid);
  let exited = false;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    // As exec's stop: the first process is killed before it may have joined its group.
    if (options.killer && !exited && child.pid !== undefined) killQuietly(-child.pid);
    stopping ??= options.killer ? killGroup(options.killer) : child.pid === undefined ? Promise.resolve() : killSession(child.pid).catch(() => undefined);
    return stopping;
  };
  for (const stream of child.stdio) stream?.on('error', () => undefined);
  frame.end(options.frame);
  const forward = (stream: Readable) =>
    stream.on('data', (chunk: Buffer) => {
      bytesMoved(chunk.length);
      const taken = options.onOutput(chunk);
      if (!(taken instanceof Promise)) return;
      stream.pause();
      const resume = () => void stream.resume();
      void taken.then(resume, resume);
    });
  forward(stdout);
  // socat's own complaints: it reports the command's non-zero exit as an error of its own, so
  // they reach the terminal only when it could not run the command at all.
  let complaints = '';
  stderr.on('data', (chunk: Buffer) => (complaints = (complaints + chunk.toString('utf8')).slice(-1024)));
  child.once('error', (err) => options.onError(err));
  child.once('exit', () => {
    exited = true;
    // The command is over: whatever it left behind (`nohup sleep &`) ends with its terminal, which
    // also closes the pipes those held, so the output's end comes.
    void stop();
  });
  child.once('close', (exitCode, signal) => {
    control.destroy();
    resized();
    // The command's own status when the wrapper told it; socat's otherwise (it could not start).
    const code = /^([0-9]{1,3})\n$/.exec(reported);
    const result = code ? { exitCode: Number(code[1]), signal: null } : { exitCode, signal };
    if (!code && complaints) void options.onOutput(Buffer.from(complaints.replaceAll('\n', '\r\n')));
    void stop().then(() => options.onExit(result));
  });
  return {
    write(data, done) {
      if (exited || !stdin.writable) return done();
      stdin.write(data, () => done());
    },
    resize(cols, rows, done) {
      if (exited || !control.writable) return done();
      resizing.push(done);
      control.write(`${Math.trunc(cols)} ${Math.trunc(rows)}\n`);
    },
    stop() {
      void stop().then(() => {
        for (const stream of child.stdio) stream?.destroy();
      });
    },
  };
}
