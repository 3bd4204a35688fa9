import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { connect, type Socket } from 'node:net';
import { constants } from 'node:os';
import { isStdinStream, STDIN_WINDOW_BYTES, type ExecRequest, type ExecResult } from '../../types.ts';
import { killGroup, type GroupKill } from '../cgroups.ts';
import { armDeadline } from '../deadline.ts';
import { drained } from '../../../drained.ts';
import { CHUNK_BYTES, frame, frameHeader, FrameReader, requestFrame } from './protocol.ts';
import type { Frame } from '../../exec-frame.ts';
import { bytesMoved } from '../../../reclaim.ts';

// One command through a sandbox's agent (paddock-agent.c): a connection to its socket, the
// request, then the command's pid, which is moved into the command's own cgroup before the agent
// lets it exec. Output comes as frames and is read no faster than the consumer takes it; a
// timeout or an abort ends everything in the command's group, as on the nsenter path.

export interface AgentTarget {
  /** The agent's socket on the host. */
  socket: string;
  /** The sandbox's init (the agent) as the host sees it. */
  initPid: number;
  /** The command's own group: its cgroup.procs, and how to end everything in it. */
  procs: string;
  killer: GroupKill;
  /** That group's name below the sandbox's v2 group: the agent starts the command in it where it can. */
  group?: string;
}

/** The socket closed before the command's exit was told: the sandbox (its init) is gone, or going. */
export class AgentGoneError extends Error {
  override name = 'AgentGoneError';
}

// After a stopped command's group is empty, how long its exit may take to arrive before the
// answer is given without it.
const EXIT_AFTER_KILL_MS = 2000;
const RE_KILL_MS = 50;

const SIGNAL_NAMES = new Map<number, string>(Object.entries(constants.signals).map(([name, n]) => [n, name]));

export function runThroughAgent(target: AgentTarget, command: Frame, request: ExecRequest): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket: Socket = connect(target.socket);
    const frames = new FrameReader();
    // Started in its group by the agent (target.group), a command runs at once; otherwise the agent
    // says 'P' and holds it until it is moved there and let go.
    let letGo = target.group !== undefined;
    let stopping: Promise<void> | undefined;
    let settled = false;
    let holding = false;
    /** Once stopped, output is read and dropped: the agent must reach the exit to tell it. */
    let discarding = false;
    let stdinOpen = true;
    let stdinFailure: Error | undefined;
    let exitTimer: NodeJS.Timeout | undefined;

    const settle = (finish: () => void): void => {
      if (settled) return;
      settled = true;
      deadline.disarm();
      clearTimeout(exitTimer);
      socket.destroy();
      finish();
    };
    const killed = (): ExecResult => ({ exitCode: null, signal: 'SIGKILL', timedOut: deadline.timedOut, durationMs: performance.now() - started });
    const answer = (result: ExecResult): void => {
      const give = () => settle(() => (stdinFailure ? reject(stdinFailure) : resolve(result)));
      // Stopped: what the command left in its group is ended before the answer, however late it came.
      if (stopping) void stopping.then(() => killGroup(target.killer)).then(give);
      else give();
    };

    function stop(): void {
      if (stopping || settled) return;
      stdinOpen = false;
      stopping = killGroup(target.killer);
      // Not yet let go: closing the connection ends the held command (the agent kills its session).
      if (!letGo) return answer(killed());
      discarding = true;
      holding = false;
      socket.resume();
      take();
      // The agent may not have started the command yet (its request still on the way): born in
      // its group after that kill, it is found by the next, until the exit is told.
      const until = Date.now() + EXIT_AFTER_KILL_MS;
      const again = (): void => {
        if (settled) return;
        if (Date.now() > until) return answer(killed());
        exitTimer = setTimeout(() => void killGroup(target.killer).then(again), RE_KILL_MS);
        exitTimer.unref();
      };
      void stopping.then(again);
    }

    const deadline = armDeadline(request, stop);

    const output = (consume: ExecRequest['onStdout'], data: Buffer): void => {
      if (discarding) return;
      const wait = consume?.(data);
      if (!(wait instanceof Promise)) return;
      holding = true;
      socket.pause();
      const release = (): void => {
        if (!holding) return;
        holding = false;
        if (!yielding) socket.resume();
        take();
      };
      void wait.then(release, release);
    };

    async function letItGo(nsPid: number): Promise<void> {
      const hostPid = hostPidOf(target.initPid, nsPid);
      // Not found: it has died already, or the sandbox is going; without its group it must not run.
      if (hostPid === undefined) return fail(new AgentGoneError('the command ended before it could start'));
      // The agent could not make it (it makes the groups only where it starts commands in them).
      await mkdir(dirname(target.procs)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      await writeFile(target.procs, String(hostPid));
      if (settled || stopping) return;
      letGo = true;
      socket.write(frame('G'));
    }

    /** One stdin frame: its header, then the bytes as they are (written together, not copied into one buffer). */
    function writeStdin(bytes: Uint8Array): boolean {
      socket.cork();
      socket.write(frameHeader('I', bytes.byteLength));
      const fits = socket.write(bytes);
      socket.uncork();
      return fits;
    }

    async function feed(): Promise<void> {
      const stdin = request.stdin;
      if (!isStdinStream(stdin)) {
        for (let at = 0; stdin && at < stdin.byteLength; at += CHUNK_BYTES) writeStdin(stdin.subarray(at, at + CHUNK_BYTES));
        socket.write(frame('D'));
        return;
      }
      const chunks = stdin[Symbol.asyncIterator]();
      let sinceTurn = 0;
      try {
        while (stdinOpen && !settled) {
          const next = await chunks.next();
          if (next.done) {
            if (stdinOpen && !settled) socket.write(frame('D'));
            return;
          }
          if (!stdinOpen || settled) break;
          let fits = true;
          for (let at = 0; at < next.value.byteLength; at += CHUNK_BYTES) fits = writeStdin(next.value.subarray(at, at + CHUNK_BYTES));
          sinceTurn += next.value.byteLength;
          if (!fits) {
            sinceTurn = 0;
            await drained(socket);
          } else if (sinceTurn >= STDIN_WINDOW_BYTES) {
            // Writes a fast agent keeps taking finish at once and never wait on I/O, and a source
            // whose next chunk is ready needs none either: without a turn of the event loop the
            // agent's 'C' (the command closed its stdin) would not be read while the source drains.
            sinceTurn = 0;
            await new Promise<void>((resume) => setImmediate(resume));
          }
        }
      } catch (err) {
        // A source that failed must not reach the command as a complete input: it is stopped.
        if (settled) return;
        stdinFailure = err instanceof Error ? err : new Error(String(err));
        stop();
        return;
      }
      await chunks.return?.();
    }

    function fail(err: Error): void {
      settle(() => reject(err));
    }

    /** The socket has closed: what is left is the frames read before, which may still hold the exit. */
    let closed = false;

    function take(): void {
      for (;;) {
        if (holding || settled) return;
        const next = frames.next();
        if (!next) return ended();
        const { type, payload } = next;
        switch (type) {
          case 'P':
            letGo = false;
            letItGo(payload.readUInt32LE(0)).catch((err: unknown) => fail(err instanceof Error ? err : new Error(String(err))));
            break;
          case 'O':
            output(request.onStdout, payload);
            break;
          case 'E':
            output(request.onStderr, payload);
            break;
          case 'C':
            stdinOpen = false;
            break;
          case 'X': {
            const code = payload.readInt32LE(0);
            const signal = payload.readInt32LE(4);
            answer({
              exitCode: code < 0 ? null : code,
              signal: signal ? (SIGNAL_NAMES.get(signal) ?? `SIG${signal}`) : null,
              timedOut: deadline.timedOut,
              durationMs: performance.now() - started,
            });
            return;
          }
          case 'F': {
            // It could not start (no process left under the sandbox's limit, say): told as a shell
            // tells a failed fork, on stderr with 126.
            if (!discarding) void request.onStderr?.(Buffer.from(`paddock: could not start the command: ${payload.toString('utf8')}\n`));
            return answer({ exitCode: 126, signal: null, timedOut: deadline.timedOut, durationMs: performance.now() - started });
          }
          default:
            return fail(new Error(`the sandbox agent sent an unknown frame (${JSON.stringify(type)})`));
        }
      }
    }

    // One read's worth a turn of the event loop: libuv reads a readable socket up to 32 times in a
    // turn, so a few commands flooding at once would fill one turn with megabytes of output to
    // decode and mask while every other request waited.
    let yielding = false;
    const resumeNextTurn = (): void => {
      yielding = false;
      if (!holding && !settled) socket.resume();
    };
    socket.on('data', (chunk: Buffer) => {
      bytesMoved(chunk.length);
      frames.push(chunk);
      take();
      if (holding || settled || yielding) return;
      yielding = true;
      socket.pause();
      setImmediate(resumeNextTurn);
    });
    // A connection that fails (the sandbox gone under it) is told by its close.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
      take();
    });

    /** Every frame is taken: a closed socket without the exit is the sandbox gone, or a stopped command's end. */
    function ended(): void {
      if (!closed || settled) return;
      if (stopping) return answer(killed());
      fail(new AgentGoneError('the sandbox agent closed the connection before the command exited'));
    }
    socket.write(requestFrame(command, target.group));
    // Stdin is taken from the start, whichever way the command starts (the agent holds it in the
    // pipe until the command reads).
    feed().catch((err: unknown) => fail(err instanceof Error ? err : new Error(String(err))));
    if (request.signal?.aborted) stop();
  });
}

/**
 * The host pid of the agent's child that is `nsPid` inside the sandbox. The agent forked it just
 * now, so it is among the newest of the init's children, read from the end; the list is bounded
 * by the sandbox's process limit.
 */
export function hostPidOf(initPid: number, nsPid: number): number | undefined {
  let children: string;
  try {
    children = readFileSync(`/proc/${initPid}/task/${initPid}/children`, 'latin1');
  } catch {
    return undefined;
  }
  const pids = children.split(' ').filter(Boolean);
  for (let i = pids.length - 1; i >= 0; i--) {
    let status: string;
    try {
      status = readFileSync(`/proc/${pids[i]}/status`, 'latin1');
    } catch {
      continue;
    }
    const line = /^NSpid:\t([\d\t]+)$/m.exec(status)?.[1];
    if (line && Number(line.slice(line.lastIndexOf('\t') + 1)) === nsPid) return Number(pids[i]);
  }
  return undefined;
}

