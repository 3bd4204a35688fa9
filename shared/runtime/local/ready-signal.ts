import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { killQuietly } from './processes.ts';

/**
 * Waits for a process the runtime started in a session of its own (slirp4netns, the host's
 * resolver) to say it is ready: a write on the pipe at its fd 3. `admit` is given its pid first
 * (its cgroups). Resolves with the pid, the process left to run on its own; rejects, the process
 * killed, when it cannot start, exits first, or `deadline` passes.
 */
export async function untilReady(child: ChildProcess, options: { what: string; deadline: number; admit?: (pid: number) => Promise<void> }): Promise<number> {
  const decided = new AbortController();
  try {
    const ready = child.stdio[3] as Readable;
    ready.on('error', () => undefined);
    const failed = Promise.race([
      once(child, 'error', { signal: decided.signal }).then(([err]) => Promise.reject(err as Error)),
      once(child, 'exit', { signal: decided.signal }).then(() => Promise.reject(new Error(`${options.what} exited`))),
      delay(Math.max(0, options.deadline - Date.now()), undefined, { signal: decided.signal }).then(() => Promise.reject(new Error(`${options.what} did not start in time`))),
    ]);
    failed.catch(() => undefined);
    if (child.pid === undefined) await failed;
    const pid = child.pid!;
    if (options.admit) await Promise.race([options.admit(pid), failed]);
    await Promise.race([once(ready, 'data', { signal: decided.signal }), failed]);
    for (const stream of child.stdio) stream?.destroy();
    child.unref();
    return pid;
  } catch (err) {
    if (child.pid !== undefined) killQuietly(child.pid);
    throw err;
  } finally {
    decided.abort();
  }
}
