// The pod exec API runs an argv and nothing else: no working directory, no environment, no
// timeout, and closing the connection does not stop the command. So every command goes through
// this small wrapper in plain POSIX sh (checked with dash and bash). User values only ever
// travel as positional arguments, never inside the script text, so nothing in them is parsed.
//
//   $1 working directory, $2 marker token, $3 watchdog seconds, then the count of NAME=VALUE
//   pairs, the pairs, and the argv.
//
// The command runs in a session of its own (setsid), so one `kill -9 -PGID` ends its whole
// process tree. Before anything else the new group leader prints "<token> g<pgid>" on stderr,
// which the runtime strips and uses to kill the group from a second exec on timeout or abort.
// It is the leader itself that prints, so the line comes before any output of the command.
//
// The leader then becomes `timeout -s KILL`, a watchdog that ends the group a little after the
// timeout should the runtime not get there (it crashed, or the connection broke). Being the
// command's parent, it ends with it: a separate sleeping watchdog would have to be killed at
// the end, and a kill landing between its fork and its exec leaves its sleep behind. Without a
// timeout program the command runs without that backstop. Found by absolute path, before the
// user's PATH applies.
//
// A command that cannot be found ends with 127, as in any shell; a working directory that
// cannot be entered with 125, as the local runtime's `env -C` does.
const LEADER =
  'printf "%s %s%s\\n" "$1" "$2" "$$" >&2; w=$3; shift 3; ' +
  'x=; for c in /usr/bin/timeout /bin/timeout; do [ -x "$c" ] && x=$c && break; done; ' +
  'n=$1; shift; while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n - 1)); done; ' +
  '[ -z "$x" ] || exec "$x" -s KILL "$w" "$@"; exec "$@"';

const WRAPPER = `cd -- "$1" || exit 125
t=$2 w=$3
shift 3
exec 3<&0
if command -v setsid >/dev/null 2>&1; then
  setsid /bin/sh -c '${LEADER}' sh "$t" g "$w" "$@" <&3 3<&- &
else
  /bin/sh -c '${LEADER}' sh "$t" p "$w" "$@" <&3 3<&- &
fi
exec 3<&-
wait "$!" 2>/dev/null`;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface WrapperInput {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  token: string;
  watchdogSeconds: number;
}

export function wrapperArgv(input: WrapperInput): string[] {
  if (input.argv.length === 0) throw new TypeError('argv must name a program');
  const pairs = Object.entries(input.env).map(([name, value]) => {
    if (!ENV_NAME.test(name)) throw new TypeError(`not a valid environment variable name: ${JSON.stringify(name)}`);
    return `${name}=${value}`;
  });
  for (const arg of [input.cwd, ...pairs, ...input.argv]) {
    if (arg.includes('\0')) throw new TypeError('arguments, the working directory and environment values cannot contain NUL');
  }
  return [
    '/bin/sh',
    '-c',
    WRAPPER,
    'paddock-exec',
    input.cwd,
    input.token,
    String(input.watchdogSeconds),
    String(pairs.length),
    ...pairs,
    ...input.argv,
  ];
}

/** The argv of the second exec that ends a command's tree; target is "-PGID" or a bare PID. */
export function killArgv(target: string): string[] {
  return ['/bin/sh', '-c', 'kill -9 "$1"', 'paddock-kill', target];
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
