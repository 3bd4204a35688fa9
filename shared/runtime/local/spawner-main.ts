// The command spawner's process (see spawner.ts). It runs runCommand for its parent and passes
// the output and the outcome back over the IPC channel. It imports as little as it can: its
// memory is what every fork copies.
import { ChunkQueue } from '../chunk-queue.ts';
import { killGroup, type GroupKill } from './cgroups.ts';
import { runCommand, type RunOptions } from './exec.ts';
import { launchSandbox, type LaunchRequest } from './launch.ts';
import { killSession } from './processes.ts';
import { OUTPUT_WINDOW_BYTES, type FromSpawner, type OutputStreamName, type ToSpawner } from './spawner-protocol.ts';
import { runTerminal, type TerminalRun } from './terminal.ts';
import { PermanentRuntimeError } from '../types.ts';

/** A command in progress: how to stop it, its session's leader once spawned, and its output in flight. */
interface Running {
  abort: AbortController;
  pid?: number;
  killer?: GroupKill;
  windows: Record<OutputStreamName, Window>;
  /** A streamed stdin: what the runtime sent and the command's pipe has not taken yet. */
  stdin?: ChunkQueue;
}

/** A stream's bytes sent and not yet acknowledged, and the reader waiting for room. */
interface Window {
  inFlight: number;
  waiting?: () => void;
}

const running = new Map<number, Running>();

/** A terminal in progress, with its output in flight as exec's streams have theirs. */
interface OpenTerminal {
  run: TerminalRun;
  pid?: number;
  killer?: GroupKill;
  window: Window;
}

const terminals = new Map<number, OpenTerminal>();

/** A sandbox's init being started: how to let it run once held, how to give up, and the start itself. */
interface Launching {
  go(): void;
  stop: AbortController;
  done: Promise<void>;
}

const launches = new Map<number, Launching>();

function send(message: FromSpawner): void {
  // The parent may be gone: that is handled by 'disconnect', not here.
  if (process.connected) process.send!(message, undefined, undefined, () => undefined);
}

function terminalMessage(message: Extract<ToSpawner, { type: `terminal-${string}` }>): void {
  const { id } = message;
  const open = terminals.get(id);
  switch (message.type) {
    case 'terminal-input':
      return open ? open.run.write(message.data, () => send({ type: 'terminal-input-taken', id })) : send({ type: 'terminal-input-taken', id });
    case 'terminal-resize':
      return open ? open.run.resize(message.cols, message.rows, () => send({ type: 'terminal-resized', id })) : send({ type: 'terminal-resized', id });
    case 'terminal-close':
      return open?.run.stop();
    case 'terminal-ack':
      if (!open) return;
      open.window.inFlight -= message.bytes;
      if (open.window.inFlight < OUTPUT_WINDOW_BYTES) open.window.waiting?.();
      return;
    case 'terminal-open':
      break;
  }
  const entry: OpenTerminal = { killer: message.killer, window: { inFlight: 0 }, run: undefined as unknown as TerminalRun };
  terminals.set(id, entry);
  entry.run = runTerminal(
    message.commandLine,
    {
      frame: message.frame,
      killer: message.killer,
      onOutput(data) {
        send({ type: 'terminal-output', id, data });
        entry.window.inFlight += data.byteLength;
        if (entry.window.inFlight < OUTPUT_WINDOW_BYTES) return;
        return new Promise<void>((resume) => {
          entry.window.waiting = () => {
            entry.window.waiting = undefined;
            resume();
          };
        });
      },
      onExit(result) {
        terminals.delete(id);
        send({ type: 'terminal-exit', id, ...result });
      },
      onError(err) {
        terminals.delete(id);
        send({ type: 'failed', id, message: err.message });
      },
    },
    (pid) => {
      entry.pid = pid;
      send({ type: 'started', id, pid });
    },
  );
}

/**
 * Starts a sandbox's init for the runtime: it runs once in its groups, or, relayed, once the
 * runtime, told its pid as soon as bubblewrap holds it, says `launch-go`.
 */
function launch(id: number, request: LaunchRequest): void {
  let go!: () => void;
  const released = new Promise<void>((resolve) => (go = resolve));
  const stop = new AbortController();
  const done = launchSandbox({
    ...request,
    signal: stop.signal,
    beforeStart: async (pid) => {
      if (!request.relay) return;
      send({ type: 'launch-held', id, pid });
      await released;
    },
  }).then(
    (launched) => send({ type: 'launch-ready', id, launched }),
    (err: unknown) =>
      send({ type: 'launch-failed', id, message: err instanceof Error ? err.message : String(err), permanent: err instanceof PermanentRuntimeError }),
  );
  launches.set(id, { go, stop, done: done.finally(() => launches.delete(id)) });
}

process.on('message', (message: ToSpawner) => {
  if (message.type === 'launch') return launch(message.id, message.request);
  if (message.type === 'launch-go') return launches.get(message.id)?.go();
  if (message.type === 'launch-stop') return launches.get(message.id)?.stop.abort(new Error(message.message));
  if (message.type.startsWith('terminal-')) {
    terminalMessage(message as Extract<ToSpawner, { type: `terminal-${string}` }>);
    return;
  }
  if (message.type === 'abort') {
    running.get(message.id)?.abort.abort();
    return;
  }
  if (message.type === 'stdin') {
    running.get(message.id)?.stdin?.push(message.data);
    return;
  }
  if (message.type === 'stdin-end') {
    running.get(message.id)?.stdin?.end();
    return;
  }
  if (message.type === 'ack') {
    const window = running.get(message.id)?.windows[message.stream];
    if (!window) return;
    window.inFlight -= message.bytes;
    if (window.inFlight < OUTPUT_WINDOW_BYTES) window.waiting?.();
    return;
  }
  if (message.type !== 'run') return;
  const { id } = message;
  const entry: Running = {
    abort: new AbortController(),
    killer: message.killer,
    windows: { stdout: { inFlight: 0 }, stderr: { inFlight: 0 } },
    stdin: message.stdinStream ? new ChunkQueue((bytes) => send({ type: 'stdin-ack', id, bytes })) : undefined,
  };
  running.set(id, entry);
  const output = (stream: OutputStreamName) => (data: Uint8Array) => {
    send({ type: stream, id, data });
    const window = entry.windows[stream];
    window.inFlight += data.byteLength;
    if (window.inFlight < OUTPUT_WINDOW_BYTES) return;
    // Past the window the pipe is not read until the runtime's consumer catches up.
    return new Promise<void>((resume) => {
      window.waiting = () => {
        window.waiting = undefined;
        resume();
      };
    });
  };
  const request: RunOptions = {
    frame: message.frame,
    timeoutMs: message.timeoutMs,
    stdin: entry.stdin ?? message.stdin,
    signal: entry.abort.signal,
    killer: message.killer,
    onStdout: output('stdout'),
    onStderr: output('stderr'),
  };
  runCommand(message.commandLine, request, (pid) => {
    entry.pid = pid;
    send({ type: 'started', id, pid });
  })
    .then(
      (result) => send({ type: 'done', id, result }),
      (err: unknown) => send({ type: 'failed', id, message: err instanceof Error ? err.message : String(err) }),
    )
    .finally(() => {
      entry.stdin?.end();
      running.delete(id);
    });
});

// The parent is gone (it exited, or was killed): no one will read these commands' output, so
// they are stopped as a timeout would stop them, and the spawner goes too.
process.on('disconnect', () => {
  const kills = [...running.values(), ...terminals.values()].flatMap((r) => (r.killer ? [killGroup(r.killer)] : r.pid === undefined ? [] : [killSession(r.pid)]));
  // A start no one waits for any more is undone (sandboxes started already live on, as they
  // would the runtime's end).
  const starts = [...launches.values()].map((l) => (l.stop.abort(new Error('the runtime went away')), l.done));
  void Promise.allSettled([...kills, ...starts]).then(() => process.exit(0));
});

send({ type: 'ready' });
