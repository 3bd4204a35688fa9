import { ENV_NAME, RESERVED_ENV_PREFIX } from '../exec/env-names.ts';

// What a command is, handed to it through a pipe rather than on any command line: the host's
// process table (`ps -eo args`, readable by every host user) shows only the fixed reader script
// below, never the command's environment, which holds the account's secrets.
//
// The frame is plain text that POSIX sh reads with `read -r` alone, which never reads a pipe past
// the newline it stops at. Each item is a header line `<kind> <lines> [name]`, then its value as
// that many lines (a value with n newlines is n + 1 lines): kind `e` an environment variable,
// `c` the working directory, `a` one argv element. NUL cannot travel (nor can it in execve).


/**
 * Shell text that reads a frame from descriptor `fd`: it assembles "$@" element by element with
 * `set --`, exports the variables and enters the working directory. Its own variables are named
 * __PADDOCK_*, which no command's environment may use, so nothing it exports is overwritten.
 * Exit 125 when the directory cannot be entered, as `env -C` does; a frame that breaks off is 126.
 */
export function frameReader(fd: string): string {
  return [
    `__PADDOCK_NL='\n'`,
    'set --',
    `while IFS=" " read -r __PADDOCK_K __PADDOCK_N __PADDOCK_V <&${fd}; do`,
    '  [ "$__PADDOCK_K" = . ] && break',
    '  __PADDOCK_NAME=$__PADDOCK_V __PADDOCK_V= __PADDOCK_I=0',
    '  while [ "$__PADDOCK_I" -lt "$__PADDOCK_N" ]; do',
    `    IFS= read -r __PADDOCK_L <&${fd} || exit 126`,
    '    if [ "$__PADDOCK_I" -eq 0 ]; then __PADDOCK_V=$__PADDOCK_L; else __PADDOCK_V=$__PADDOCK_V$__PADDOCK_NL$__PADDOCK_L; fi',
    '    __PADDOCK_I=$((__PADDOCK_I + 1))',
    '  done',
    '  case $__PADDOCK_K in',
    '    e) export "$__PADDOCK_NAME=$__PADDOCK_V" ;;',
    '    c) __PADDOCK_CWD=$__PADDOCK_V ;;',
    '    a) set -- "$@" "$__PADDOCK_V" ;;',
    '    *) exit 126 ;;',
    '  esac',
    'done',
    '[ "$__PADDOCK_K" = . ] || exit 126',
    'cd -- "$__PADDOCK_CWD" 2>/dev/null || { echo "paddock: cannot enter the working directory $__PADDOCK_CWD" >&2; exit 125; }',
    // cd exports a PWD of the shell's own, which is not the command's to inherit.
    'unset __PADDOCK_NL __PADDOCK_K __PADDOCK_N __PADDOCK_V __PADDOCK_NAME __PADDOCK_I __PADDOCK_L __PADDOCK_CWD PWD OLDPWD',
  ].join('\n');
}

// The local runtime's reader: the frame on descriptor 3, then argv exec'd as given: `exec` treats
// every word as the program and its arguments, never as an assignment or an option of a
// wrapper, and looks the program up on the command's own PATH.
export const READER = [frameReader('3'), 'exec 3<&-', 'exec "$@"'].join('\n');

export interface Frame {
  argv: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string>>;
}

function item(kind: string, value: string, name?: string): string {
  if (value.includes('\0')) throw new TypeError('arguments, the working directory and environment values cannot contain NUL');
  const lines = value.split('\n').length;
  return `${kind} ${lines}${name === undefined ? '' : ` ${name}`}\n${value}\n`;
}

export function encodeFrame(frame: Frame): Buffer {
  if (frame.argv.length === 0) throw new TypeError('argv must name a program');
  const parts: string[] = [];
  for (const [name, value] of Object.entries(frame.env)) {
    if (!ENV_NAME.test(name)) throw new TypeError(`not an environment variable name: ${JSON.stringify(name)}`);
    if (name.startsWith(RESERVED_ENV_PREFIX)) throw new TypeError(`environment variable names starting with ${RESERVED_ENV_PREFIX} are reserved`);
    parts.push(item('e', value, name));
  }
  parts.push(item('c', frame.cwd));
  for (const arg of frame.argv) parts.push(item('a', arg));
  parts.push('.\n');
  return Buffer.from(parts.join(''), 'utf8');
}
