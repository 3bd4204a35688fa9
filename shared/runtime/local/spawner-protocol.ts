import type { ExecResult } from '../types.ts';
import type { GroupKill } from './cgroups.ts';
import type { Launched, LaunchRequest } from './launch.ts';

export type OutputStreamName = 'stdout' | 'stderr';

/** Messages from the runtime to its command spawner. */
export type ToSpawner =
  | {
      type: 'run';
      id: number;
      commandLine: string[];
      /** Written to the command's descriptor 3 (the exec frame), then closed. */
      frame?: Uint8Array;
      timeoutMs: number;
      stdin?: Uint8Array;
      /** The stdin comes as `stdin` messages, then `stdin-end`, each within the window the acks give. */
      stdinStream?: boolean;
      /** How to end everything the command started; without it, its session is killed. */
      killer?: GroupKill;
    }
  | { type: 'abort'; id: number }
  /** Part of a streamed stdin. The runtime has at most STDIN_WINDOW_BYTES sent and not acknowledged. */
  | { type: 'stdin'; id: number; data: Uint8Array }
  | { type: 'stdin-end'; id: number }
  /** The runtime's consumer has taken this many bytes of the stream: the spawner may send more. */
  | { type: 'ack'; id: number; stream: OutputStreamName; bytes: number }
  /** A terminal (terminal.ts): its own messages, beside exec's; ids are shared with exec's. */
  | { type: 'terminal-open'; id: number; commandLine: string[]; frame: Uint8Array; killer?: GroupKill }
  /** Keystrokes; answered by terminal-input-taken once written to the terminal. */
  | { type: 'terminal-input'; id: number; data: Uint8Array }
  /** Answered by terminal-resized once the size is set. */
  | { type: 'terminal-resize'; id: number; cols: number; rows: number }
  /** The terminal's consumer has taken this many bytes of its output. */
  | { type: 'terminal-ack'; id: number; bytes: number }
  | { type: 'terminal-close'; id: number }
  /** A sandbox's init (launch.ts), held until it is in its groups and, with `relay`, until `launch-go`; ids are shared with exec's. */
  | { type: 'launch'; id: number; request: LaunchRequest }
  /** The runtime has done its part for the held init (its network): let it run. */
  | { type: 'launch-go'; id: number }
  /** The runtime gave up on the start (its own step failed): kill the init and bubblewrap. */
  | { type: 'launch-stop'; id: number; message: string };

/** Messages from the spawner: `ready` once, then per command `started`, output, and `done` or `failed`. */
export type FromSpawner =
  | { type: 'ready' }
  | { type: 'started'; id: number; pid: number }
  | { type: 'stdout' | 'stderr'; id: number; data: Uint8Array }
  /** This many bytes of the streamed stdin have left the spawner's queue for the command's pipe. */
  | { type: 'stdin-ack'; id: number; bytes: number }
  | { type: 'done'; id: number; result: ExecResult }
  | { type: 'failed'; id: number; message: string }
  | { type: 'terminal-output'; id: number; data: Uint8Array }
  | { type: 'terminal-input-taken'; id: number }
  | { type: 'terminal-resized'; id: number }
  | { type: 'terminal-exit'; id: number; exitCode: number | null; signal: string | null }
  /** The init's pid, held before it runs anything. */
  | { type: 'launch-held'; id: number; pid: number }
  | { type: 'launch-ready'; id: number; launched: Launched }
  /** The start failed and everything it started is killed; `permanent`: bubblewrap said why, and a retry will not help. */
  | { type: 'launch-failed'; id: number; message: string; permanent: boolean };

export { OUTPUT_WINDOW_BYTES, STDIN_WINDOW_BYTES } from '../types.ts';
