// The one small interface between Paddock and whatever runs sandboxes. Two implementations:
// `local` (bubblewrap on this host, the embedded default) and `kubernetes` (one pod per sandbox).
// Workers call create and destroy; the API calls exec; the reaper calls list to find orphans.

export interface SandboxSpec {
  /** The sandbox id (`sbx_…`): lower-case letters, digits and one underscore. */
  id: string;
  accountId: string;
  /** Container image; the local runtime ignores it (it always runs the host's /usr). */
  image?: string;
  /** The session cap: runtimes that can (Kubernetes' activeDeadlineSeconds) end the sandbox themselves past it plus a grace period. */
  capSeconds: number;
}

export type RuntimeStatus = 'pending' | 'running' | 'failed' | 'terminated';

export interface RuntimeSandbox {
  id: string;
  accountId?: string;
  status: RuntimeStatus;
  /** Why it failed, in words a user can act on (an image that cannot be pulled, say). */
  reason?: string;
}

export interface ExecRequest {
  /** Run as given: argv[0] is looked up on the sandbox's PATH. */
  argv: string[];
  /** Working directory inside the sandbox; default /workspace. */
  cwd?: string;
  env?: Record<string, string>;
  stdin?: Uint8Array;
  timeoutMs: number;
  /** Aborting kills the command's whole process tree, as a timeout does. */
  signal?: AbortSignal;
  onStdout?: (chunk: Uint8Array) => void;
  onStderr?: (chunk: Uint8Array) => void;
}

export interface ExecResult {
  /** null when a signal ended the command. */
  exitCode: number | null;
  /** The signal's name (SIGKILL, …) when a signal ended it. */
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
}

export interface SandboxRuntime {
  readonly name: 'local' | 'kubernetes';
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
  close(): Promise<void>;
}

/** A failure that retrying will not fix (a bad image, say): the sandbox is failed at once. */
export class PermanentRuntimeError extends Error {
  override name = 'PermanentRuntimeError';
}

export class SandboxGoneError extends Error {
  override name = 'SandboxGoneError';
}
