import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, closeSync, openSync, renameSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { readFile } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { PermanentRuntimeError } from '../types.ts';
import { GENERATED, GENERATED_ETC_FIRST_FD } from './bwrap-args.ts';
import { GENERATED_ETC, runningAsRoot, SANDBOX_ENV } from './identity.ts';
import { SANDBOX_CA_PATH, SYSTEM_BUNDLE } from './egress-ca.ts';
import { killQuietly, readStat } from './processes.ts';
import { admitTo } from './cgroups.ts';

// Starting a sandbox's init under bubblewrap. Bubblewrap reports the init's pid (--info-fd), then
// holds it before it runs anything (--block-fd) so the caller can put it into its cgroups first:
// nothing inside ever runs outside them.
//
// This runs in the runtime's command spawner (spawner-main.ts), not in the process that creates
// sandboxes: a worker that spawned bubblewrap itself would fork its whole address space on every
// create (spawner.ts says what that costs), its event loop held meanwhile. The spawner writes the
// held init's pid into the cgroups the runtime named (admitTo); only for a sandbox with network
// does it relay the pid to the runtime, which attaches the network meanwhile (CommandSpawner.launch).

// The sandbox's pid 1 (--as-pid-1) where the agent is not. Signals sent from inside never reach a
// namespace's init, so a user's `kill -9 -1` cannot end the sandbox; `wait` reaps every orphan that
// is reparented to it, and the loop restarts the sleeper when the user kills that. It says it runs
// on fd 5, then lets go of every descriptor it was started with. Its $1 is the sandbox's deadline
// (seconds since the epoch; 0: none): once the clock passes it, it exits, and with it everything in
// the sandbox's pid namespace. A `date` that cannot run (the sandbox out of processes) counts as not
// yet.
const INIT_SCRIPT =
  'echo >&5; exec 3<&- 4>&- 5>&- 6<&- 7<&- 8<&- 9<&- </dev/null >/dev/null 2>&1; ' +
  'while :; do ' +
  'if [ "$1" -gt 0 ]; then now=$(date +%s) || now=; case $now in ""|*[!0-9]*) s=1 ;; *) [ "$now" -lt "$1" ] || exit 0; s=$(($1 - now)) ;; esac; else s=infinity; fi; ' +
  'sleep "$s" & wait; done';

/**
 * After every mount: the sandbox's root and its /dev (tmpfs that bubblewrap made, owned by the
 * sandbox user) become read-only, so the mounts on them (/workspace, /tmp, /dev/shm, later
 * /dev/pts) are the only places it can write. An /etc/ld.so.preload, a program on PATH before the
 * system's, or any other file a program reads from the root would otherwise be the tenant's to plant.
 */
const READ_ONLY = ['--remount-ro', '/dev', '--remount-ro', '/'];

/** An argument of the init's command line that names its sandbox, in `ps` and for cleanup. */
export const sandboxMarker = (id: string): string => `paddock-sandbox-${id}`;

/**
 * Run as root in the sandbox's own mount namespace (`unshare --mount --propagation private`),
 * before bubblewrap: mounts the disk ($4, attached by disk.ts) on the workspace ($5), detaches
 * the loop device (freed with the unmount), leaves mkfs's lost+found out and the workspace the
 * user's alone, then runs the rest of the arguments as uid $6. $1 to $3: mount, losetup and
 * setpriv, by absolute path.
 */
const DISK_MOUNT = `"$1" -t ext4 -o nosuid,nodev,noatime "$4" "$5" || exit 1
"$2" -d "$4"
rmdir "$5/lost+found" 2>/dev/null
chmod 700 "$5" || exit 1
uid=$6
setpriv=$3
shift 6
exec "$setpriv" --reuid="$uid" --regid="$uid" --clear-groups -- "$@"`;

export interface LaunchOptions {
  bwrap: string;
  id: string;
  /** Namespaces, user and mounts: all but the start-up plumbing added here. */
  args: string[];
  hostUid: number;
  /** Where bubblewrap's own complaints go (stderr), to explain a failed start. */
  logFile: string;
  /** The cgroup.procs files the held init's pid is written to, before beforeStart (cgroups.ts's initProcsFiles). */
  admitTo?: string[];
  /** Runs while the init is held, given its host pid, once it is in its groups. */
  beforeStart(pid: number): Promise<void>;
  /** When the start is given up. */
  deadline: number;
  /**
   * When the sandbox ends by itself (wall-clock ms; 0: never): its init kills everything in it
   * then, whether or not any Paddock process is alive (the session cap's own backstop).
   */
  endsAt: number;
  /** Ends the start (the init and bubblewrap killed) with the signal's reason. */
  signal?: AbortSignal;
  /**
   * The init is the agent (agent/paddock-agent.c) instead of a shell: its binary, and where its
   * socket is made on the host (the runtime connects there for every exec).
   */
  agent?: { binary: string; socket: string; cgroupDir?: string };
  /**
   * The sandbox's own disk, attached to `device` (disk.ts): mounted on `workspace` in a mount
   * namespace made for this sandbox, as root, before bubblewrap starts in it as the sandbox's user.
   * `programs`: unshare, mount, losetup and setpriv, by absolute path.
   */
  disk?: { device: string; workspace: string; programs: { unshare: string; mount: string; losetup: string; setpriv: string } };
  /** The egress's authority for the sandbox to trust (egress-ca.ts): the bundle that replaces the host's, and the certificate alone. */
  trust?: { bundle: string; ca: string };
}

// The agent's descriptors, after the generated /etc files': its listening socket, and its binary
// (bubblewrap copies it into the sandbox, so no host path appears in the sandbox's mount table).
const AGENT_SOCKET_FD = GENERATED_ETC_FIRST_FD + GENERATED.length;
const AGENT_BINARY_FD = AGENT_SOCKET_FD + 1;
const AGENT_CGROUP_FD = AGENT_BINARY_FD + 1;
/** Where the agent is inside the sandbox. */
export const AGENT_PATH = '/.sandbox-init';

/**
 * What the runtime sends its spawner to start a sandbox's init: all but the callbacks. `relay`:
 * the runtime has work of its own to do while the init is held (its network), so the spawner
 * tells it the pid and waits for its word; without it the init runs once admitted, a round trip
 * between the two processes sooner.
 */
export type LaunchRequest = Omit<LaunchOptions, 'beforeStart' | 'signal'> & { relay?: boolean };

export interface Launched {
  pid: number;
  startTime: string;
}

export async function launchSandbox(options: LaunchOptions): Promise<Launched> {
  const listening = options.agent ? await listen(`${options.agent.socket}.new`) : undefined;
  // Synchronous file calls: no await may come between the spawn and the watch for its 'error'.
  const log = openSync(options.logFile, 'w', 0o600);
  const binary = options.agent ? openSync(options.agent.binary, 'r') : undefined;
  // The sandbox's cgroup directory, for the agent to start commands into their own groups.
  const cgroupDir = options.agent?.cgroupDir ? openSync(options.agent.cgroupDir, 'r') : undefined;
  // Read by bubblewrap from descriptors, as the generated /etc is: no host path in the sandbox's mount table.
  const trust = options.trust ? [openSync(options.trust.bundle, 'r'), openSync(options.trust.ca, 'r')] : [];
  let child: ChildProcess;
  try {
    const endsAt = Math.max(0, Math.ceil(options.endsAt));
    const start = ['--block-fd', '3', '--info-fd', '4', '--as-pid-1', '--'];
    const init = listening
      ? ['--perms', '0555', '--ro-bind-data', String(AGENT_BINARY_FD), AGENT_PATH, ...READ_ONLY, ...start,
          AGENT_PATH, String(AGENT_SOCKET_FD), '5', sandboxMarker(options.id), String(endsAt), ...(cgroupDir === undefined ? [] : [String(AGENT_CGROUP_FD)])]
      : [...READ_ONLY, ...start, '/bin/sh', '-c', INIT_SCRIPT, sandboxMarker(options.id), String(Math.ceil(endsAt / 1000))];
    // After every other descriptor: the agent's are there only with the agent.
    const trustFirst = AGENT_SOCKET_FD + (listening && binary !== undefined ? 2 + (cgroupDir === undefined ? 0 : 1) : 0);
    const trustArgs = trust.length
      ? ['--perms', '0644', '--ro-bind-data', String(trustFirst), SYSTEM_BUNDLE, '--perms', '0644', '--ro-bind-data', String(trustFirst + 1), SANDBOX_CA_PATH]
      : [];
    const bwrap = [options.bwrap, ...options.args, ...trustArgs, ...init];
    const disk = options.disk;
    // With a disk, the chain execs from unshare to bubblewrap in this one process (its pid the child's).
    const command = disk
      ? [disk.programs.unshare, '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', DISK_MOUNT, 'paddock-disk',
          disk.programs.mount, disk.programs.losetup, disk.programs.setpriv, disk.device, disk.workspace, String(options.hostUid), ...bwrap]
      : bwrap;
    child = spawn(command[0]!, command.slice(1), {
      // Its own session, and no --die-with-parent: the sandbox outlives the process that made it.
      detached: true,
      cwd: '/',
      env: SANDBOX_ENV,
      stdio: [
        'ignore', 'ignore', log, 'pipe', 'pipe', 'pipe', ...GENERATED.map(() => 'pipe' as const),
        ...(listening && binary !== undefined ? [listening.fd, binary, ...(cgroupDir === undefined ? [] : [cgroupDir])] : []),
        ...trust,
      ],
      // The disk's chain starts as root and becomes the sandbox's user (setpriv) before bubblewrap.
      ...(runningAsRoot && !disk ? { uid: options.hostUid, gid: options.hostUid } : {}),
    });
  } finally {
    closeSync(log);
    if (binary !== undefined) closeSync(binary);
    if (cgroupDir !== undefined) closeSync(cgroupDir);
    for (const fd of trust) closeSync(fd);
    if (listening) {
      // The agent holds the socket now. Renamed first: closing a listening socket unlinks its path.
      if (options.agent) renameSync(listening.path, options.agent.socket);
      listening.server.close();
    }
  }
  let pid: number | undefined;
  // Ends the watch for failure (an exit, an 'error', the deadline) once the start is decided.
  const decided = new AbortController();
  try {
    const failed = Promise.race([
      once(child, 'exit', { signal: decided.signal }).then(() => Promise.reject(new Error('bubblewrap exited'))),
      timeout(options.deadline, decided.signal),
      ...(options.signal ? [stopped(options.signal, decided.signal)] : []),
    ]);
    failed.catch(() => undefined);
    const step = <T>(promise: Promise<T>): Promise<T> => Promise.race([promise, failed]);

    // fd 3: the hold (--block-fd), 4: the init's pid (--info-fd), 5: the init says it runs; from
    // 6 on, the generated /etc files' bytes (--ro-bind-data).
    const [, , , hold, info, ready, ...rest] = child.stdio as unknown as [null, null, null, Writable, Readable, Readable, ...Writable[]];
    // After them, the agent's descriptors, which are not streams here.
    const etcFiles = rest.slice(0, GENERATED.length);
    // A bubblewrap that dies resets these; its exit is what tells of the failure.
    for (const stream of [hold, info, ready, ...etcFiles]) stream.on('error', () => undefined);
    GENERATED.forEach((name, i) => etcFiles[i]!.end(GENERATED_ETC[name]));
    pid = await step(childPid(info));
    const stat = readStat(pid);
    if (!stat) throw new Error('the sandbox init ended before it started');
    if (options.admitTo) await step(admitTo(options.admitTo, pid));
    await step(options.beforeStart(pid));
    hold.end('x');
    await step(once(ready, 'data'));
    release(child);
    return { pid, startTime: stat.startTime };
  } catch (err) {
    if (pid !== undefined) killQuietly(pid);
    if (child.pid !== undefined) killQuietly(child.pid);
    throw await explain(child, options.logFile, err);
  } finally {
    decided.abort();
  }
}

/** A listening socket, only root may connect to, for the agent to inherit. */
async function listen(path: string): Promise<{ server: Server; fd: number; path: string }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  chmodSync(path, 0o600);
  // The descriptor Node holds (libuv's), handed to bubblewrap as the agent's.
  const fd = (server as unknown as { _handle: { fd: number } })._handle.fd;
  return { server, fd, path };
}

async function childPid(info: Readable): Promise<number> {
  let text = '';
  for await (const chunk of info) text += String(chunk);
  const pid: unknown = text ? (JSON.parse(text) as Record<string, unknown>)['child-pid'] : undefined;
  // Nothing written: bubblewrap failed, and its exit says so.
  if (typeof pid !== 'number') return new Promise<never>(() => undefined);
  return pid;
}

/** Rejects with the reason once `signal` aborts (unless `decided` does first). */
async function stopped(signal: AbortSignal, decided: AbortSignal): Promise<never> {
  if (!signal.aborted) await once(signal, 'abort', { signal: decided });
  throw signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
}

async function timeout(deadline: number, signal: AbortSignal): Promise<never> {
  await delay(Math.max(0, deadline - Date.now()), undefined, { signal });
  throw new Error('the sandbox did not start in time');
}

/** Lets the creating process exit while bubblewrap keeps watching over the init. */
function release(child: ChildProcess): void {
  for (const stream of child.stdio) stream?.destroy();
  child.unref();
}

/** What bubblewrap wrote on stderr is the reason a start failed, and retrying will not fix it. */
async function explain(child: ChildProcess, logFile: string, err: unknown): Promise<unknown> {
  // Killed just now: its last words are written once it has exited.
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    await Promise.race([once(child, 'exit').catch(() => undefined), delay(1000, undefined, { ref: false })]);
  }
  const said = (await readFile(logFile, 'utf8').catch(() => '')).trim();
  release(child);
  return said ? new PermanentRuntimeError(`bubblewrap could not start the sandbox: ${said}`) : err;
}
