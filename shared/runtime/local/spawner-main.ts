// The command spawner's process (see spawner.ts). It runs runCommand for its parent and passes
// the output and the outcome back over the IPC channel. It imports as little as it can: its
// memory is what every fork copies.
import type { ExecRequest } from '../types.ts';
import { runCommand } from './exec.ts';
import { killSession } from './processes.ts';
import type { FromSpawner, ToSpawner } from './spawner-protocol.ts';

/** A command in progress: how to stop it, and its session's leader once spawned. */
interface Running {
  abort: AbortController;
  pid?: number;
}

const running = new Map<number, Running>();

function send(message: FromSpawner): void {
  // The parent may be gone: that is handled by 'disconnect', not here.
  if (process.connected) process.send!(message, undefined, undefined, () => undefined);
}

process.on('message', (message: ToSpawner) => {
  if (message.type === 'abort') {
    running.get(message.id)?.abort.abort();
    return;
  }
  const { id } = message;
  const entry: Running = { abort: new AbortController() };
  running.set(id, entry);
  const request: ExecRequest = {
    argv: message.commandLine,
    timeoutMs: message.timeoutMs,
    stdin: message.stdin,
    signal: entry.abort.signal,
    onStdout: (data) => send({ type: 'stdout', id, data }),
    onStderr: (data) => send({ type: 'stderr', id, data }),
  };
  runCommand(message.commandLine, request, (pid) => {
    entry.pid = pid;
    send({ type: 'started', id, pid });
  })
    .then(
      (result) => send({ type: 'done', id, result }),
      (err: unknown) => send({ type: 'failed', id, message: err instanceof Error ? err.message : String(err) }),
    )
    .finally(() => running.delete(id));
});

// The parent is gone (it exited, or was killed): no one will read these commands' output, so
// they are stopped as a timeout would stop them, and the spawner goes too.
process.on('disconnect', () => {
  const pids = [...running.values()].flatMap((r) => (r.pid === undefined ? [] : [r.pid]));
  void Promise.allSettled(pids.map((pid) => killSession(pid))).then(() => process.exit(0));
});

send({ type: 'ready' });
