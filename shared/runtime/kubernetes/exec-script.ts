import { encodeFrame, frameReader } from '../exec-frame.ts';

// The pod exec API runs an argv and nothing else: no working directory, no environment, no
// timeout, and closing the connection does not stop the command. So every command goes through
// this small wrapper in plain POSIX sh (checked with dash and bash). The exec request's URL, which
// the API server's audit log and the node's process table record, carries only the fixed script,
// a token and the watchdog's seconds: the command itself (environment with its secrets, working
// directory, argv) is framed ahead of stdin (see ../exec-frame.ts) and read with `read`
// alone, which never reads a pipe past the line it wants, so the rest of stdin is the command's.
//
//   $1 marker token, $2 watchdog seconds.
//
// The command runs in a session of its own (setsid), so one `kill -9 -PGID` ends its process
// group. Before anything else the new group leader prints "<token> g<pgid>" on stderr, which the
// runtime strips and uses to kill the group from a second exec on timeout or abort. It is the
// leader itself that prints, so the line comes before any output of the command. Every process
// of the command also carries __PADDOCK_EXEC=<token> in its environment, inherited through any
// fork, setsid or double fork: the kill exec ends those too (a restricted pod has no cgroup of
// its own per exec; a process that empties its own environment and leaves the session is the one
// that escapes, and the pod's deadline and the sandbox's destroy remain its end).
//
// The leader then becomes `timeout -s KILL`, a watchdog that ends the group a little after the
// timeout should the runtime not get there (it crashed, or the connection broke). Being the
// command's parent, it ends with it. Without a timeout program the command runs without that
// backstop. A command that ends by SIGKILL (the watchdog's, the runtime's kill of its group, any
// other) is then swept by its token by the wrapper itself, as the kill exec does (sweep, below):
// what left its group is ended even when the runtime never sent that exec (it timed the command
// out before the marker came, or the connection broke). setsid and timeout are found by absolute
// path before the command's own variables (its PATH among them) are exported.
//
// A command that cannot be found ends with 127, as in any shell; a working directory that
// cannot be entered with 125, as the local runtime's does.

// The leader uses no variables: the command's exported ones would be overwritten.
const LEADER = 'printf "%s %s%s\\n" "$1" "$2" "$$" >&2; shift 2; exec "$@"';

const WRAPPER = `__PADDOCK_T=$1 __PADDOCK_W=$2
__PADDOCK_S=; for c in /usr/bin/setsid /bin/setsid; do [ -x "$c" ] && __PADDOCK_S=$c && break; done
__PADDOCK_X=; for c in /usr/bin/timeout /bin/timeout; do [ -x "$c" ] && __PADDOCK_X=$c && break; done
${frameReader('0')}
export __PADDOCK_EXEC="$__PADDOCK_T"
[ -z "$__PADDOCK_X" ] || set -- "$__PADDOCK_X" -s KILL "$__PADDOCK_W" "$@"
# A command started with & gets /dev/null for stdin unless it is handed over explicitly.
exec 3<&0
if [ -n "$__PADDOCK_S" ]; then
  "$__PADDOCK_S" /bin/sh -c '${LEADER}' sh "$__PADDOCK_T" g "$@" <&3 3<&- &
else
  /bin/sh -c '${LEADER}' sh "$__PADDOCK_T" p "$@" <&3 3<&- &
fi
exec 3<&-
wait "$!" 2>/dev/null
__PADDOCK_R=$?
if [ "$__PADDOCK_R" -eq 137 ]; then
  unset __PADDOCK_EXEC; PATH=/usr/sbin:/usr/bin:/sbin:/bin; IFS=' 	
'
${sweep('$__PADDOCK_T')}
fi
exit "$__PADDOCK_R"`;

// A terminal (tty: true) runs this instead: the pod's terminal is the command's, so no session of
// its own and no watchdog (the terminal ends when its connection does, and the runtime kills what
// is left by the token). The frame comes on the terminal itself, which would echo it (the secrets
// with it) and cut its lines at 4 KiB: so the wrapper first puts the terminal in raw mode without
// echo, says so with "<token> p<pid>" (the runtime sends the frame only after that line, which it
// strips), reads the frame, and gives the terminal its settings back before the command starts.
const TERMINAL_WRAPPER = `__PADDOCK_T=$1
__PADDOCK_G=$(stty -g 2>/dev/null)
stty raw -echo 2>/dev/null
printf '%s p%s\\n' "$__PADDOCK_T" "$$"
${frameReader('0')}
[ -z "$__PADDOCK_G" ] || stty "$__PADDOCK_G" 2>/dev/null
printf '%s r\n' "$__PADDOCK_T"
export __PADDOCK_EXEC="$__PADDOCK_T"
unset __PADDOCK_T __PADDOCK_G
exec "$@"`;

/**
 * A terminal's argv (fixed text and the token) and the frame to send once its first marker has
 * come ("<token> p<pid>": the terminal is raw and silent, so the frame is neither echoed nor
 * edited). The second ("<token> r") says the terminal is itself again: what was typed before it
 * goes out only then, or, sent while raw, it would sit in the terminal as no line at all.
 */
export function terminalWrapperArgv(input: Omit<WrapperInput, 'watchdogSeconds'>): { argv: string[]; frame: Buffer } {
  return {
    argv: ['/bin/sh', '-c', TERMINAL_WRAPPER, 'paddock-terminal', input.token],
    frame: encodeFrame({ argv: input.argv, cwd: input.cwd, env: input.env }),
  };
}

export interface WrapperInput {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  token: string;
  watchdogSeconds: number;
}

/** The exec request's argv (fixed text, the token, the seconds) and the frame to send ahead of stdin. */
export function wrapperArgv(input: WrapperInput): { argv: string[]; frame: Buffer } {
  return {
    argv: ['/bin/sh', '-c', WRAPPER, 'paddock-exec', input.token, String(input.watchdogSeconds)],
    frame: encodeFrame({ argv: input.argv, cwd: input.cwd, env: input.env }),
  };
}

/**
 * Kills every process whose environment carries `token` (a shell word), round after round until a
 * round finds none (at most 20). Where grep reads NUL-separated lines (-z: GNU grep, as
 * Debian-based images have), one grep a round names every such process; otherwise two processes
 * per process on the pod's table, which a storm of timeouts (each with its own kill) made too slow
 * to finish. The shell running it must not carry the token itself: its own greps would match.
 */
function sweep(token: string): string {
  return `z=; printf 'a\\0' | grep -qz a 2>/dev/null && z=1
i=0
while [ $i -lt 20 ]; do
  n=0
  if [ -n "$z" ]; then
    for e in $(grep -lzx "__PADDOCK_EXEC=${token}" /proc/[0-9]*/environ 2>/dev/null); do
      p=\${e#/proc/}; p=\${p%/environ}
      [ "$p" = $$ ] && continue
      kill -9 "$p" 2>/dev/null && n=$((n + 1))
    done
  else
    for e in /proc/[0-9]*/environ; do
      p=\${e#/proc/}; p=\${p%/environ}
      [ "$p" = $$ ] && continue
      if tr '\\0' '\\n' < "$e" 2>/dev/null | grep -qx "__PADDOCK_EXEC=${token}"; then kill -9 "$p" 2>/dev/null && n=$((n + 1)); fi
    done
  fi
  [ $n -eq 0 ] && break
  i=$((i + 1))
done`;
}

/**
 * The argv of the second exec that ends a command: its process group ("-PGID", or a bare PID),
 * then every process whose environment carries the command's token, until none is left.
 */
export function killArgv(target: string, token: string): string[] {
  // No `--`: dash's kill (Debian's /bin/sh) takes it for a pid and kills nothing, and "-PGID"
  // after the signal is a group in every shell.
  const script = `kill -9 "$1" 2>/dev/null
${sweep('$2')}`;
  return ['/bin/sh', '-c', script, 'paddock-kill', target, token];
}

/**
 * Takes the wrapper's marker line off the front of stderr and passes everything else on. Bytes
 * that cannot be the marker (the wrapper failed before the command started) go through as they
 * are, so no output is ever lost.
 */
export class MarkerFilter {
  private pending: Buffer | undefined = Buffer.alloc(0);
  private readonly prefix: Buffer;
  private readonly onTarget: (target: string) => void;
  private readonly forward: (chunk: Buffer) => void;

  constructor(token: string, onTarget: (target: string) => void, forward: (chunk: Buffer) => void) {
    this.prefix = Buffer.from(`${token} `);
    this.onTarget = onTarget;
    this.forward = forward;
  }

  push(chunk: Buffer): void {
    if (this.pending === undefined) return this.forward(chunk);
    const buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const n = Math.min(buf.length, this.prefix.length);
    if (!buf.subarray(0, n).equals(this.prefix.subarray(0, n))) return this.passThrough(buf);
    const newline = buf.indexOf(10);
    if (newline === -1) {
      if (buf.length > this.prefix.length + 24) return this.passThrough(buf);
      this.pending = buf;
      return;
    }
    const match = /^([gp])([0-9]+)$/.exec(buf.subarray(this.prefix.length, newline).toString('latin1'));
    if (!match) return this.passThrough(buf);
    this.pending = undefined;
    this.onTarget(match[1] === 'g' ? `-${match[2]}` : String(match[2]));
    if (newline + 1 < buf.length) this.forward(buf.subarray(newline + 1));
  }

  /** Output ended: whatever was held back was not a marker after all. */
  flush(): void {
    const held = this.pending;
    this.pending = undefined;
    if (held?.length) this.forward(held);
  }

  private passThrough(buf: Buffer): void {
    this.pending = undefined;
    this.forward(buf);
  }
}
