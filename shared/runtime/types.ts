import type { Duplex } from 'node:stream';
import type { NetworkPolicy } from '../network/policy.ts';
import type { BrokeredCredential } from '../network/brokered.ts';

// The one small interface between Paddock and whatever runs sandboxes. Two implementations:
// `local` (bubblewrap on this host, the embedded default) and `kubernetes` (one pod per sandbox).
// Workers call create and destroy; the API calls exec; the reaper calls list to find orphans.

export interface SandboxSpec {
  /** The sandbox id (`sbx_…`): lower-case letters, digits and one underscore. */
  id: string;
  accountId: string;
  /** The image, as the runtime's resolveImage answered it. */
  image?: string;
  /**
   * The session cap, from now: each runtime ends the sandbox itself past it plus a grace period,
   * whatever becomes of Paddock's processes (Kubernetes: the pod's activeDeadlineSeconds; local:
   * the sandbox's own init).
   */
  capSeconds: number;
  /** Where its programs may connect (shared/network/policy.ts); absent: nowhere. */
  network?: NetworkPolicy;
}

export type RuntimeStatus = 'pending' | 'running' | 'failed' | 'terminated';

export interface RuntimeSandbox {
  id: string;
  accountId?: string;
  status: RuntimeStatus;
  /** Why it failed, in words a user can act on (an image that cannot be pulled, say). */
  reason?: string;
}

/**
 * Bytes of one stream of one command that may be on their way to the consumer, not yet taken.
 * Past it a runtime stops reading the command's output, so the command waits on its own write: a
 * flood costs this much memory, never more, however slow the reader at the end.
 */
export const OUTPUT_WINDOW_BYTES = 256 * 1024;

/**
 * Bytes of a streamed stdin taken from its source and not yet written to the command's pipe. The
 * source is read no faster than the command reads: a command that stops reading holds its
 * producer, hop by hop, instead of filling memory.
 */
export const STDIN_WINDOW_BYTES = 256 * 1024;

/**
 * The command's input: bytes given whole, or a stream written as it comes (see
 * STDIN_WINDOW_BYTES). The end of either closes the command's stdin. A command that exits, or
 * closes its stdin, before a stream ends stops its reading (the iterator's return() is called).
 * A stream that throws stops the command as an abort does, its stdin never closed as if complete,
 * and exec rejects with that error once the command is gone.
 */
export type ExecStdin = Uint8Array | AsyncIterable<Uint8Array>;

export function isStdinStream(stdin: ExecStdin | undefined): stdin is AsyncIterable<Uint8Array> {
  return stdin !== undefined && !(stdin instanceof Uint8Array);
}

/** A command of Paddock's own beside a sandbox (SandboxRuntime.execBeside). */
export type BesideRequest = Omit<ExecRequest, 'cwd' | 'stdin'> & {
  /** Its stdout this descriptor (a file of Paddock's), in place of onStdout. */
  stdoutFd?: number;
  /** Its stdin this descriptor (a file of Paddock's); else none. */
  stdinFd?: number;
};

export interface ExecRequest {
  /** Run as given: argv[0] is looked up on the sandbox's PATH. */
  argv: string[];
  /** Working directory inside the sandbox; default /workspace. */
  cwd?: string;
  env?: Record<string, string>;
  stdin?: ExecStdin;
  timeoutMs: number;
  /** Aborting kills the command's whole process tree, as a timeout does. */
  signal?: AbortSignal;
  /**
   * Output as it comes. A returned promise holds the stream: the runtime reads no more of it
   * until the promise settles, so a slow consumer slows the command instead of filling memory.
   */
  onStdout?: (chunk: Uint8Array) => void | Promise<void>;
  onStderr?: (chunk: Uint8Array) => void | Promise<void>;
}

export interface ExecResult {
  /** null when a signal ended the command. */
  exitCode: number | null;
  /** The signal's name (SIGKILL, …) when a signal ended it. */
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
}

export interface TerminalRequest {
  /** Run as given on a pseudo-terminal of the sandbox's own: argv[0] is looked up on the sandbox's PATH. */
  argv: string[];
  env?: Record<string, string>;
  /** The terminal's size when the command starts. */
  cols: number;
  rows: number;
  /** Aborting ends the terminal: its command's whole process tree is killed. */
  signal?: AbortSignal;
  /**
   * The terminal's output as it comes. A returned promise holds it: the runtime reads no more
   * until the promise settles, so a slow reader slows the command instead of filling memory.
   */
  onOutput: (chunk: Uint8Array) => void | Promise<void>;
}

export interface TerminalSession {
  /**
   * Keystrokes for the terminal. The promise settles once the runtime has passed them on; the
   * caller sends no more until then (so input a command does not read waits in the caller's
   * socket, not in memory). After the end, writes are dropped.
   */
  write(data: Uint8Array): Promise<void>;
  /**
   * The terminal's new size: the command's foreground process group gets SIGWINCH. The promise
   * settles once the size is set (the local runtime), or once it is passed on (a pod's, whose
   * kubelet sets it); keystrokes written after it settles are read at that size.
   */
  resize(cols: number, rows: number): Promise<void>;
  /** Settles once the command has ended and everything it started is killed; rejects with SandboxGoneError when the sandbox ended under it. */
  readonly exit: Promise<{ exitCode: number | null; signal: string | null }>;
}

export interface SandboxRuntime {
  readonly name: 'local' | 'kubernetes';
  /** The image a sandbox runs when its create names none, as sandboxes report it. */
  readonly defaultImage: string;
  /**
   * Whether egress rules may name domains (shared/network/policy.ts): the runtime answers a
   * sandbox's DNS itself and opens the addresses it answered. Where it cannot, a policy that
   * names one is refused before anything is made.
   */
  readonly egressByName: boolean;
  /**
   * Whether the runtime's egress can broker credentials (shared/network/brokered.ts): set a
   * secret's header on the sandbox's HTTPS requests for its hosts, the sandbox trusting the
   * egress's certificate authority. Where it cannot, a secret with `inject` is refused.
   */
  readonly egressBrokering: boolean;
  /**
   * The image a create asking for `requested` (none: the default) runs, decided by the runtime
   * that will run it; throws an ImageRefusedError when it cannot or may not run that image.
   */
  resolveImage(requested: string | undefined): string;
  /**
   * Creates the sandbox and resolves once it runs. Idempotent: an existing sandbox with this id
   * is waited for, not duplicated. Rejects with a PermanentRuntimeError when it can never run.
   */
  create(spec: SandboxSpec, options?: { timeoutMs?: number }): Promise<RuntimeSandbox>;
  /** Kills everything in it and removes its files. Idempotent: an unknown id is success. */
  destroy(id: string): Promise<void>;
  get(id: string): Promise<RuntimeSandbox | undefined>;
  /** Every sandbox this runtime holds, whatever Paddock's database says. */
  list(): Promise<RuntimeSandbox[]>;
  /** Runs one command; rejects with SandboxGoneError when the sandbox does not exist or is not running. */
  exec(id: string, request: ExecRequest): Promise<ExecResult>;
  /**
   * Runs one of Paddock's own commands on the host beside the sandbox, never a tenant's: as the
   * sandbox's host user, in its workspace as the host holds it, with only `env`, on the host's
   * CPUs rather than the sandbox's (a snapshot's copy and restore, shared/snapshots/). `argv[0]`
   * is a path on the host. Rejects with SandboxGoneError as exec does. Absent where the host holds no
   * workspace (Kubernetes).
   */
  execBeside?(id: string, request: BesideRequest): Promise<ExecResult>;
  /**
   * Starts a command on a pseudo-terminal inside the sandbox, with exec's isolation (the sandbox
   * user, its namespaces and limits). Rejects with SandboxGoneError as exec does.
   */
  terminal(id: string, request: TerminalRequest): Promise<TerminalSession>;
  /**
   * The sandbox's expiresAt has moved (a claim from the warm pool starts its cap anew): a runtime
   * whose own backstop can follow (the local one: its init's deadline, expiresAt plus the grace)
   * moves it and resolves true; false where it cannot (a pod's activeDeadlineSeconds is fixed at
   * its creation, as is a local sandbox's made without the agent). Rejects with SandboxGoneError
   * as exec does.
   */
  setExpiresAt?(id: string, expiresAt: Date): Promise<boolean>;
  /**
   * A connection to `port` on the sandbox's own loopback address (127.0.0.1, else ::1), made
   * from inside the sandbox's network namespace, so a program listening on loopback only is
   * reached as well as one listening on every address. The stream carries the connection's bytes
   * both ways, its end a half-close passed on; destroying it closes the connection. Backpressure
   * holds hop by hop: nothing between the two ends buffers more than a socket's window. Aborting
   * `signal` rejects an open still under way and destroys a connection already open. Rejects
   * with PortNotListeningError when nothing accepts on the port, SandboxGoneError as exec does,
   * and a plain Error that says why where the port cannot be reached otherwise (a connect that
   * timed out; a local sandbox made without its agent, which has no way in to its ports).
   * Kubernetes' port-forward learns of a refusal only once its stream is open, and carries no
   * half-close: there the stream fails with PortNotListeningError before its first byte, and
   * its end() ends nothing toward the program (callers end a request by its framing, not so).
   * With `reads`, the program's bytes go to them rather than to 'data' events (PortReads).
   */
  openPort(id: string, port: number, options?: { signal?: AbortSignal; reads?: PortReads }): Promise<Duplex>;
  /**
   * The running sandbox's egress becomes `policy`: connections it opens from then on are let
   * through or refused by it (one already open to a destination the new policy refuses is cut
   * where the runtime can). Rejects with SandboxGoneError as exec does, and with a
   * PermanentRuntimeError where this runtime cannot give the sandbox network at all.
   */
  setNetwork(id: string, policy: NetworkPolicy): Promise<void>;
  /**
   * The credentials the sandbox's egress sets on its HTTPS requests from now on, replacing those
   * it had (none: it sets none). Held outside the sandbox, in memory only; a sandbox without
   * network has nothing to send them on, and keeps none. Rejects with SandboxGoneError as exec
   * does. Absent where egressBrokering is false.
   */
  broker?(id: string, credentials: readonly BrokeredCredential[]): Promise<void>;
  /**
   * The workers' sweep of the sandboxes' egress (EgressSweep), starting again on the way what a
   * sandbox's egress needs if it died (the local runtime's resolver and broker). Absent where the
   * runtime counts nothing (on Kubernetes that is the network plugin's).
   */
  sweepEgress?(): Promise<EgressSweep>;
  /** Readies what a first create would otherwise wait for (the local runtime's command spawner). */
  warm?(): Promise<void>;
  close(): Promise<void>;
}

/** What a sweep of the sandboxes' egress found. */
export interface EgressSweep {
  /** What each running sandbox with network has had refused so far (packets, a refused connection being one, and names). */
  refused: Map<string, number>;
  /**
   * Sandboxes with brokered hosts whose egress holds none of the credentials sent to it (started
   * again since, they died with it): the caller sends them again (broker).
   */
  uncredentialed: string[];
}

/** A failure that retrying will not fix (a bad image, say): the sandbox is failed at once. */
export class PermanentRuntimeError extends Error {
  override name = 'PermanentRuntimeError';
}

/**
 * A requested image refused before anything is made: `not_allowed`, the operator's list does not
 * name it; `not_supported`, this runtime cannot run it. Permanent: a worker meeting it (the
 * configuration changed after the API resolved the image) fails the sandbox at once.
 */
export class ImageRefusedError extends PermanentRuntimeError {
  override name = 'ImageRefusedError';
  readonly reason: 'not_allowed' | 'not_supported';
  constructor(reason: 'not_allowed' | 'not_supported', message: string) {
    super(message);
    this.reason = reason;
  }
}

export class SandboxGoneError extends Error {
  override name = 'SandboxGoneError';
}

/** Nothing accepts connections on the port asked for inside the sandbox. */
export class PortNotListeningError extends Error {
  override name = 'PortNotListeningError';
}

/**
 * The program's bytes read into the caller's memory (runtime.openPort): `buffer()` gives the
 * memory for the next read, and `take(chunk)` the part of it a read filled, from the first byte
 * after the open to the last; false pauses the stream until its resume(). Where the runtime reads
 * a socket itself (local), no memory is allocated per read: at hundreds of MB/s, a buffer a read
 * makes a large heap's garbage collector the main cost of relaying them. A buffer of
 * `buffer()`'s is the caller's again once `take` of its chunk returns, or, when the runtime read
 * its own answer into it, once `buffer()` is called for the next read (or the stream is closed).
 * Other chunks are the stream's own: the program's first bytes when they came with the runtime's
 * own answer (local), and every chunk where a protocol frames the bytes (Kubernetes' WebSocket),
 * which never calls `buffer()`.
 */
export interface PortReads {
  buffer(): Buffer;
  take(chunk: Buffer): boolean;
}

