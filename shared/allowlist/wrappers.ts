/**
 * Programs that run other programs. Each handler parses the program's options the way the real
 * program does (every handler here stops at the first non-option like GNU getopt with "+", except
 * `su`, which permutes and is handled on its own), finds the program or shell text it would run,
 * and hands it back to the checker. Whatever a handler cannot parse for certain is refused.
 */
import { isProtectedVariable, protectedVariableReason } from './env.ts';
import { Refusal, type Word } from './parse.ts';

export type Level = 'shell' | 'exec';

export interface PayloadContext {
  /** Text the wrapper replaces with run-time data: `{}` for find -exec, the -I string of xargs. */
  taint: string | null;
  /** True under xargs without -I: run-time data is appended to the command line. */
  appends: boolean;
}

export const NO_PAYLOAD: PayloadContext = { taint: null, appends: false };

export interface Checker {
  /** Checks a command given as words; `exec` = started by execve, where shell builtins do not exist. */
  argv(words: readonly Word[], level: Level, pc: PayloadContext): void;
  /** Checks shell text that `program` hands to a shell. */
  script(text: string, program: string): void;
}

type Handler = (name: string, args: readonly Word[], c: Checker, pc: PayloadContext, level: Level) => void;

// ---------------------------------------------------------------------------------------------
// helpers

function literal(name: string, w: Word, pc: PayloadContext): string {
  if (w.value === null) {
    throw new Refusal(name, `cannot check what \`${name}\` runs: its argument \`${w.raw}\` is not a literal word`);
  }
  if (pc.taint !== null && w.value.includes(pc.taint)) {
    throw new Refusal(name, `cannot check what \`${name}\` runs: \`${pc.taint}\` in \`${w.raw}\` is replaced by run-time data`);
  }
  return w.value;
}

function optionArgument(name: string, w: Word): void {
  if (!w.singleField) {
    throw new Refusal(name, `cannot check what \`${name}\` runs: the unquoted expansion \`${w.raw}\` may become several arguments`);
  }
}

function noAppend(name: string, pc: PayloadContext): void {
  if (pc.appends) {
    throw new Refusal(name, `xargs would append its input to the arguments of \`${name}\`, which could change what it runs`);
  }
}

type LongKind = 'flag' | 'arg' | 'optarg';

interface OptionSpec {
  flags?: string;
  withArg?: string;
  /** Options whose argument, if any, is attached (`-i{}`). */
  optionalArg?: string;
  refuse?: Record<string, string>;
  long?: Record<string, LongKind>;
  longRefuse?: Record<string, string>;
  /** `-` alone is an option (env). */
  dashAlone?: boolean;
  /** `-N` sets a number (nice). */
  numeric?: boolean;
}

interface Parsed {
  index: number;
  /** Every option seen, in order, with its argument (null when none or not a literal). */
  seen: Array<[string, string | null]>;
}

function has(p: Parsed, ...keys: string[]): boolean {
  return p.seen.some(([k]) => keys.includes(k));
}

function valueOf(p: Parsed, ...keys: string[]): string | null | undefined {
  let out: string | null | undefined;
  for (const [k, v] of p.seen) if (keys.includes(k)) out = v;
  return out;
}

function parseOptions(name: string, args: readonly Word[], spec: OptionSpec, pc: PayloadContext): Parsed {
  const seen: Array<[string, string | null]> = [];
  let i = 0;
  const unknown = (opt: string): never => {
    throw new Refusal(name, `cannot check what \`${name}\` runs: its option \`${opt}\` is not known to the checker`);
  };
  const takeNext = (opt: string): string | null => {
    const w = args[++i];
    if (w === undefined) throw new Refusal(name, `\`${name}\`: the option \`${opt}\` needs an argument`);
    optionArgument(name, w);
    return w.value;
  };
  for (; i < args.length; i++) {
    const v = literal(name, args[i]!, pc);
    if (v === '--') {
      i++;
      break;
    }
    if (v === '-') {
      if (spec.dashAlone) {
        seen.push(['-', null]);
        continue;
      }
      break;
    }
    if (!v.startsWith('-')) break;
    if (v.startsWith('--')) {
      const eq = v.indexOf('=');
      const key = eq === -1 ? v : v.slice(0, eq);
      const refused = spec.longRefuse?.[key];
      if (refused !== undefined) throw new Refusal(name, refused);
      const kind = spec.long?.[key];
      if (kind === undefined) unknown(key);
      if (kind === 'flag') {
        if (eq !== -1) unknown(v);
        seen.push([key, null]);
      } else if (kind === 'optarg' || eq !== -1) {
        seen.push([key, eq === -1 ? null : v.slice(eq + 1)]);
      } else {
        seen.push([key, takeNext(key)]);
      }
      continue;
    }
    if (spec.numeric && /^-[0-9]+$/.test(v)) {
      seen.push(['-N', v.slice(1)]);
      continue;
    }
    for (let j = 1; j < v.length; j++) {
      const ch = v[j]!;
      const refused = spec.refuse?.[ch];
      if (refused !== undefined) throw new Refusal(name, refused);
      if (spec.flags?.includes(ch)) {
        seen.push([`-${ch}`, null]);
        continue;
      }
      if (spec.withArg?.includes(ch)) {
        seen.push([`-${ch}`, j + 1 < v.length ? v.slice(j + 1) : takeNext(`-${ch}`)]);
        break;
      }
      if (spec.optionalArg?.includes(ch)) {
        seen.push([`-${ch}`, j + 1 < v.length ? v.slice(j + 1) : null]);
        break;
      }
      unknown(`-${ch}`);
    }
  }
  return { index: i, seen };
}

const ASSIGNMENT_RAW = /^([A-Za-z_][A-Za-z0-9_]*)=/;

/** env and sudo take every argument holding `=` before the command as an assignment. */
function skipAssignments(name: string, args: readonly Word[], from: number, pc: PayloadContext): number {
  let i = from;
  for (; i < args.length; i++) {
    const w = args[i]!;
    const m = ASSIGNMENT_RAW.exec(w.raw);
    let variable: string;
    if (m) {
      optionArgument(name, w);
      variable = m[1]!;
    } else {
      const v = literal(name, w, pc);
      const eq = v.indexOf('=');
      if (eq === -1) break;
      variable = v.slice(0, eq);
    }
    if (isProtectedVariable(variable)) throw new Refusal(name, protectedVariableReason(variable));
  }
  return i;
}

interface PrefixOptions {
  /** Operands between the options and the command (timeout's DURATION, chroot's NEWROOT). */
  operands?: number;
  assignments?: boolean;
  /** Options after which the remaining arguments are not a command (ionice -p PID…). */
  noCommandWith?: string[];
  /** Refuse when no command follows (the program would then start an interactive shell). */
  commandRequired?: string;
}

function prefixWrapper(spec: OptionSpec, opts: PrefixOptions = {}): Handler {
  return (name, args, c, pc) => {
    const parsed = parseOptions(name, args, spec, pc);
    if (opts.noCommandWith && has(parsed, ...opts.noCommandWith)) {
      noAppend(name, pc);
      return;
    }
    let i = parsed.index;
    for (let k = 0; k < (opts.operands ?? 0); k++, i++) {
      const w = args[i];
      if (w === undefined) throw new Refusal(name, `\`${name}\` is missing an operand`);
      optionArgument(name, w);
    }
    if (opts.assignments) i = skipAssignments(name, args, i, pc);
    const payload = args.slice(i);
    if (payload.length === 0) {
      if (opts.commandRequired !== undefined) throw new Refusal(name, opts.commandRequired);
      noAppend(name, pc);
      return;
    }
    c.argv(payload, 'exec', pc);
  };
}

// ---------------------------------------------------------------------------------------------
// shells

/** Shells whose language is POSIX sh (plus bash/ksh extensions the parser handles or refuses). */
export const POSIX_SHELLS = new Set(['sh', 'bash', 'dash', 'ash', 'ksh', 'ksh93', 'mksh', 'lksh', 'oksh', 'posh', 'yash', 'rbash']);

/** Shells whose language this checker does not parse: refused even when on the list. */
export const OTHER_SHELLS = new Set(['zsh', 'fish', 'csh', 'tcsh', 'pwsh', 'nu', 'elvish', 'xonsh', 'rc', 'es']);

const SHELL_FLAGS = 'aefhnuvxCbmBHpPrt';
const SHELL_REFUSED: Record<string, string> = {
  s: 'reads commands from standard input, which cannot be checked',
  i: 'starts an interactive shell, which reads startup files that cannot be checked',
  l: 'starts a login shell, which runs profile files that cannot be checked',
  O: 'sets shell options (such as extglob) that change how commands are parsed',
  k: 'makes assignments anywhere on a command line change the environment',
  D: 'is not supported',
};

const shell: Handler = (name, args, c, pc) => {
  let i = 0;
  let dashC = false;
  for (; i < args.length; i++) {
    const v = literal(name, args[i]!, pc);
    if (v === '--' || v === '-') {
      i++;
      break;
    }
    if (v.startsWith('--')) {
      if (['--norc', '--noprofile', '--posix', '--noediting', '--restricted'].includes(v)) continue;
      if (v === '--version' || v === '--help') return;
      throw new Refusal(name, `\`${name} ${v}\` is not supported by the checker`);
    }
    if ((v[0] === '-' || v[0] === '+') && v.length > 1) {
      for (const ch of v.slice(1)) {
        if (ch === 'c' && v[0] === '-') dashC = true;
        else if (ch === 'o') {
          const opt = args[++i];
          if (opt === undefined) return; // `sh -o` lists the options
          if (literal(name, opt, pc) === 'keyword') throw new Refusal(name, `\`${name} -o keyword\` ${SHELL_REFUSED.k}`);
        } else if (SHELL_REFUSED[ch] !== undefined) throw new Refusal(name, `\`${name} -${ch}\` ${SHELL_REFUSED[ch]}`);
        else if (!SHELL_FLAGS.includes(ch)) throw new Refusal(name, `\`${name}\`: the option \`-${ch}\` is not known to the checker`);
      }
      continue;
    }
    break;
  }
  if (!dashC) {
    const script = args[i];
    if (script !== undefined) {
      throw new Refusal(name, `\`${name}\` would run the script \`${script.raw}\`, whose commands cannot be checked`);
    }
    throw new Refusal(name, `\`${name}\` without -c reads commands from standard input, which cannot be checked`);
  }
  const text = args[i];
  if (text === undefined) throw new Refusal(name, `\`${name} -c\` needs a command string`);
  c.script(literal(name, text, pc), name);
};

/** util-linux su permutes its options: every argument may be an option. */
const su: Handler = (name, args, c, pc) => {
  noAppend(name, pc);
  let command: string | null = null;
  let afterDashes = false;
  const take = (i: number, opt: string): string => {
    const w = args[i];
    if (w === undefined) throw new Refusal(name, `\`${name}\`: the option \`${opt}\` needs an argument`);
    return literal(name, w, pc);
  };
  for (let i = 0; i < args.length; i++) {
    const v = literal(name, args[i]!, pc);
    if (afterDashes || !v.startsWith('-')) continue;
    if (v === '--') {
      afterDashes = true;
      continue;
    }
    if (v === '-' || v === '--login') throw new Refusal(name, `\`${name} ${v}\` starts a login shell, which runs profile files that cannot be checked`);
    if (v.startsWith('--')) {
      const eq = v.indexOf('=');
      const key = eq === -1 ? v : v.slice(0, eq);
      if (key === '--command') command = eq === -1 ? take(++i, key) : v.slice(eq + 1);
      else if (['--group', '--supp-group', '--whitelist-environment'].includes(key)) {
        if (eq === -1) take(++i, key);
      } else if (!['--preserve-environment', '--pty'].includes(key) || eq !== -1) {
        throw new Refusal(name, `cannot check what \`${name}\` runs: its option \`${key}\` is not supported`);
      }
      continue;
    }
    for (let j = 1; j < v.length; j++) {
      const ch = v[j]!;
      if (ch === 'c') {
        command = j + 1 < v.length ? v.slice(j + 1) : take(++i, '-c');
        break;
      }
      if (ch === 'g' || ch === 'G' || ch === 'w') {
        if (j + 1 === v.length) take(++i, `-${ch}`);
        break;
      }
      if (!'mpPf'.includes(ch)) {
        throw new Refusal(name, `cannot check what \`${name}\` runs: its option \`-${ch}\` is not supported`);
      }
    }
  }
  if (command === null) throw new Refusal(name, `\`${name}\` without -c starts a shell whose commands cannot be checked`);
  c.script(command, name);
};

// ---------------------------------------------------------------------------------------------
// xargs and find

const xargs: Handler = (name, args, c, pc) => {
  if (pc.appends || pc.taint !== null) throw new Refusal(name, '`xargs` inside another command-running program is not supported');
  const parsed = parseOptions(name, args, {
    flags: '0oprtx',
    withArg: 'adEILnPs',
    optionalArg: 'eil',
    long: {
      '--null': 'flag', '--arg-file': 'arg', '--delimiter': 'arg', '--eof': 'optarg', '--replace': 'optarg',
      '--max-lines': 'optarg', '--max-args': 'arg', '--max-procs': 'arg', '--max-chars': 'arg',
      '--interactive': 'flag', '--no-run-if-empty': 'flag', '--verbose': 'flag', '--exit': 'flag',
      '--open-tty': 'flag', '--process-slot-var': 'arg', '--show-limits': 'flag', '--help': 'flag', '--version': 'flag',
    },
  }, pc);
  const slotVar = valueOf(parsed, '--process-slot-var');
  if (slotVar === null || (slotVar !== undefined && isProtectedVariable(slotVar))) {
    throw new Refusal(name, protectedVariableReason(slotVar ?? '--process-slot-var'));
  }
  let replace: string | null = null;
  for (const [k, v] of parsed.seen) {
    if (k === '-I') replace = v;
    else if (k === '-i' || k === '--replace') replace = v ?? '{}';
    else continue;
    if (replace === null || replace === '') throw new Refusal(name, '`xargs -I` needs a literal replacement string');
  }
  const payload = args.slice(parsed.index);
  if (payload.length === 0) return; // runs echo
  c.argv(payload, 'exec', replace !== null ? { taint: replace, appends: false } : { taint: null, appends: true });
};

const FIND_EXEC = new Set(['-exec', '-execdir', '-ok', '-okdir']);
/** find primaries that take exactly one argument (which may then be an expansion). */
const FIND_VALUE = new Set([
  '-name', '-iname', '-path', '-ipath', '-wholename', '-iwholename', '-regex', '-iregex', '-lname', '-ilname',
  '-newer', '-anewer', '-cnewer', '-samefile', '-type', '-xtype', '-user', '-group', '-perm', '-size',
  '-mtime', '-atime', '-ctime', '-mmin', '-amin', '-cmin', '-maxdepth', '-mindepth', '-printf', '-fprint',
  '-fprint0', '-fls', '-uid', '-gid', '-links', '-inum', '-used', '-context', '-fstype', '-regextype',
]);

const find: Handler = (name, args, c, pc) => {
  noAppend(name, pc);
  let i = 0;
  while (i < args.length) {
    const v = literal(name, args[i]!, pc);
    if (v === '-H' || v === '-L' || v === '-P' || v.startsWith('-O')) i++;
    else if (v === '-D') i += 2;
    else break;
  }
  for (; i < args.length; i++) {
    const w = args[i]!;
    if (w.value === null) {
      const prev = args[i - 1]?.value;
      if (w.singleField && prev != null && (FIND_VALUE.has(prev) || /^-newer[aBcmt]{2}$/.test(prev))) continue;
      throw new Refusal(name, `cannot check what \`find\` runs: \`${w.raw}\` is not a literal word and could be an action such as -exec`);
    }
    const v = literal(name, w, pc);
    if (!FIND_EXEC.has(v)) continue;
    const start = i + 1;
    let end = start;
    for (; end < args.length; end++) {
      const e = args[end]!;
      if (e.value === null) {
        throw new Refusal(name, `cannot check what \`find ${v}\` runs: \`${e.raw}\` is not a literal word`);
      }
      if (e.value === ';') break;
      if (e.value === '+' && end > start && args[end - 1]!.value === '{}') break;
    }
    if (end >= args.length) throw new Refusal(name, `\`find ${v}\` is not terminated by \`;\` or \`{} +\``);
    if (end === start) throw new Refusal(name, `\`find ${v}\` needs a command`);
    c.argv(args.slice(start, end), 'exec', { taint: '{}', appends: false });
    i = end;
  }
};

// ---------------------------------------------------------------------------------------------
// the rest

const GNU_TIME: OptionSpec = {
  flags: 'apqvV',
  withArg: 'fo',
  long: {
    '--append': 'flag', '--portability': 'flag', '--quiet': 'flag', '--verbose': 'flag', '--format': 'arg',
    '--output': 'arg', '--help': 'flag', '--version': 'flag',
  },
};

/** bash's `time` keyword (only -p) and /usr/bin/time (GNU options): both readings must pass. */
const time: Handler = (name, args, c, pc, level) => {
  if (level === 'shell') {
    let i = 0;
    while (args[i]?.value === '-p') i++;
    if (i < args.length) c.argv(args.slice(i), 'shell', pc);
  }
  prefixWrapper(GNU_TIME)(name, args, c, pc, level);
};

const busybox: Handler = (name, args, c, pc) => {
  const first = args[0];
  if (first === undefined) return;
  const v = literal(name, first, pc);
  if (v.startsWith('-')) {
    if (['--list', '--list-full', '--help'].includes(v)) return;
    throw new Refusal(name, `\`busybox ${v}\` is not supported by the checker`);
  }
  c.argv(args, 'exec', pc);
};

const watch: Handler = (name, args, c, pc) => {
  noAppend(name, pc);
  const parsed = parseOptions(name, args, {
    flags: 'bcCegprtwx',
    withArg: 'nq',
    optionalArg: 'd',
    long: {
      '--beep': 'flag', '--color': 'flag', '--no-color': 'flag', '--differences': 'optarg', '--errexit': 'flag',
      '--chgexit': 'flag', '--interval': 'arg', '--precise': 'flag', '--no-rerun': 'flag', '--no-title': 'flag',
      '--no-wrap': 'flag', '--exec': 'flag', '--equexit': 'arg', '--help': 'flag', '--version': 'flag',
    },
  }, pc);
  const payload = args.slice(parsed.index);
  if (payload.length === 0) return;
  if (has(parsed, '-x', '--exec')) {
    c.argv(payload, 'exec', pc);
    return;
  }
  // without -x, watch joins its arguments with spaces and runs them with `sh -c`
  c.script(payload.map((w) => literal(name, w, pc)).join(' '), name);
};

const flock: Handler = (name, args, c, pc) => {
  noAppend(name, pc);
  const parsed = parseOptions(name, args, {
    flags: 'sxeunoF',
    withArg: 'wE',
    refuse: { c: '`flock -c` must follow the lock file' },
    long: {
      '--shared': 'flag', '--exclusive': 'flag', '--unlock': 'flag', '--nonblock': 'flag', '--nb': 'flag',
      '--close': 'flag', '--no-fork': 'flag', '--timeout': 'arg', '--wait': 'arg', '--conflict-exit-code': 'arg',
      '--verbose': 'flag', '--help': 'flag', '--version': 'flag',
    },
  }, pc);
  const file = args[parsed.index];
  if (file === undefined) return;
  optionArgument(name, file);
  const rest = args.slice(parsed.index + 1);
  if (rest.length === 0) return;
  const first = literal(name, rest[0]!, pc);
  if (first === '-c' || first === '--command') {
    if (rest.length !== 2) throw new Refusal(name, '`flock FILE -c` takes exactly one command string');
    c.script(literal(name, rest[1]!, pc), name);
    return;
  }
  c.argv(rest, 'exec', pc);
};

const strace: Handler = (name, args, c, pc) => {
  noAppend(name, pc);
  const parsed = parseOptions(name, args, {
    flags: 'AcCdDfFhiknqrtTvVwxyYzZ',
    withArg: 'abeEIoOpPsSuUX',
    long: { '--help': 'flag', '--version': 'flag' },
  }, pc);
  for (const [k, v] of parsed.seen) {
    if (k === '-o' && (v === null || v.startsWith('|') || v.startsWith('!'))) {
      throw new Refusal(name, '`strace -o |command` pipes the trace into a command that cannot be checked');
    }
    if (k === '-E') {
      if (v === null) throw new Refusal(name, '`strace -E` needs a literal variable');
      const variable = v.split('=', 1)[0]!;
      if (isProtectedVariable(variable)) throw new Refusal(name, protectedVariableReason(variable));
    }
  }
  const payload = args.slice(parsed.index);
  if (payload.length === 0) return;
  c.argv(payload, 'exec', pc);
};

const GIT_GLOBAL_FLAGS = new Set([
  '-p', '--paginate', '-P', '--no-pager', '--bare', '--no-replace-objects', '--literal-pathspecs', '--glob-pathspecs',
  '--noglob-pathspecs', '--icase-pathspecs', '--no-optional-locks', '--no-lazy-fetch', '--no-advice', '-v',
  '--version', '-h', '--help', '--html-path', '--man-path', '--info-path', '--exec-path',
]);
const GIT_GLOBAL_WITH_ARG = new Set(['-C', '--git-dir', '--work-tree', '--namespace', '--list-cmds', '--attr-source']);

/** git is an ordinary program, but its global -c/--config-env/--exec-path can name commands to run. */
const git: Handler = (name, args, _c, pc) => {
  let i = 0;
  for (; i < args.length; i++) {
    const v = literal(name, args[i]!, pc);
    if (!v.startsWith('-')) return; // the subcommand; what follows is its arguments
    const eq = v.indexOf('=');
    const key = eq === -1 ? v : v.slice(0, eq);
    if (key.startsWith('-c') || key === '--config-env' || (key === '--exec-path' && eq !== -1)) {
      throw new Refusal(name, `\`git ${key}\` can set a command for git to run (a pager, an editor, an ssh command), which cannot be checked`);
    }
    if (GIT_GLOBAL_FLAGS.has(v)) continue;
    if (GIT_GLOBAL_WITH_ARG.has(key)) {
      if (eq === -1) {
        const a = args[++i];
        if (a !== undefined) optionArgument(name, a);
      }
      continue;
    }
    throw new Refusal(name, `cannot check what \`git\` runs: its global option \`${key}\` is not known to the checker`);
  }
  noAppend(name, pc);
};

export const WRAPPERS: ReadonlyMap<string, Handler> = new Map<string, Handler>([
  ...[...POSIX_SHELLS].map((s): [string, Handler] => [s, shell]),
  ['su', su],
  ['xargs', xargs],
  ['find', find],
  ['time', time],
  ['busybox', busybox],
  ['watch', watch],
  ['flock', flock],
  ['strace', strace],
  ['git', git],
  ['env', prefixWrapper({
    flags: 'i0v',
    withArg: 'uCa',
    refuse: { S: '`env -S` splits a string into a command line that cannot be checked' },
    long: {
      '--ignore-environment': 'flag', '--null': 'flag', '--unset': 'arg', '--chdir': 'arg', '--debug': 'flag',
      '--block-signal': 'optarg', '--default-signal': 'optarg', '--ignore-signal': 'optarg',
      '--list-signal-handling': 'flag', '--argv0': 'arg', '--help': 'flag', '--version': 'flag',
    },
    longRefuse: { '--split-string': '`env --split-string` splits a string into a command line that cannot be checked' },
    dashAlone: true,
  }, { assignments: true })],
  ['nohup', prefixWrapper({ long: { '--help': 'flag', '--version': 'flag' } })],
  ['nice', prefixWrapper({ withArg: 'n', long: { '--adjustment': 'arg', '--help': 'flag', '--version': 'flag' }, numeric: true })],
  ['timeout', prefixWrapper({
    flags: 'fpv',
    withArg: 'ks',
    long: {
      '--foreground': 'flag', '--preserve-status': 'flag', '--verbose': 'flag', '--kill-after': 'arg',
      '--signal': 'arg', '--help': 'flag', '--version': 'flag',
    },
  }, { operands: 1 })],
  ['stdbuf', prefixWrapper({
    withArg: 'ioe',
    long: { '--input': 'arg', '--output': 'arg', '--error': 'arg', '--help': 'flag', '--version': 'flag' },
  })],
  ['setsid', prefixWrapper({ flags: 'cfw', long: { '--ctty': 'flag', '--fork': 'flag', '--wait': 'flag', '--help': 'flag', '--version': 'flag' } })],
  ['chroot', prefixWrapper({
    long: { '--userspec': 'arg', '--groups': 'arg', '--skip-chdir': 'flag', '--help': 'flag', '--version': 'flag' },
  }, { operands: 1, commandRequired: '`chroot` without a command starts an interactive shell, which cannot be checked' })],
  ['ionice', prefixWrapper({
    flags: 't',
    withArg: 'cnpPu',
    long: {
      '--class': 'arg', '--classdata': 'arg', '--pid': 'arg', '--pgid': 'arg', '--uid': 'arg', '--ignore': 'flag',
      '--help': 'flag', '--version': 'flag',
    },
  }, { noCommandWith: ['-p', '-P', '-u', '--pid', '--pgid', '--uid'] })],
  ['taskset', prefixWrapper({
    flags: 'acp',
    long: { '--all-tasks': 'flag', '--cpu-list': 'flag', '--pid': 'flag', '--help': 'flag', '--version': 'flag' },
  }, { operands: 1, noCommandWith: ['-p', '--pid'] })],
  ['sudo', prefixWrapper({
    flags: 'ABbEHKklNnPSVv',
    withArg: 'CDgpRrTtUu',
    optionalArg: 'h',
    refuse: {
      i: '`sudo -i` starts a login shell, which cannot be checked',
      s: '`sudo -s` starts a shell, which cannot be checked',
      e: '`sudo -e` starts an editor, which cannot be checked',
    },
    long: {
      '--askpass': 'flag', '--background': 'flag', '--bell': 'flag', '--close-from': 'arg', '--chdir': 'arg',
      '--preserve-env': 'optarg', '--group': 'arg', '--set-home': 'flag', '--help': 'flag', '--host': 'arg',
      '--remove-timestamp': 'flag', '--reset-timestamp': 'flag', '--list': 'flag', '--non-interactive': 'flag',
      '--preserve-groups': 'flag', '--prompt': 'arg', '--chroot': 'arg', '--role': 'arg', '--stdin': 'flag',
      '--type': 'arg', '--command-timeout': 'arg', '--other-user': 'arg', '--user': 'arg', '--version': 'flag',
      '--validate': 'flag',
    },
    longRefuse: {
      '--login': '`sudo --login` starts a login shell, which cannot be checked',
      '--shell': '`sudo --shell` starts a shell, which cannot be checked',
      '--edit': '`sudo --edit` starts an editor, which cannot be checked',
    },
  }, { assignments: true })],
]);

/**
 * Programs whose purpose is to run another program but whose options the checker does not
 * parse: refused even when on the list, because what they run cannot be checked.
 */
export const OPAQUE_RUNNERS = new Set([
  'nsenter', 'unshare', 'runuser', 'doas', 'pkexec', 'chrt', 'prlimit', 'systemd-run', 'systemd-nspawn', 'script',
  'ltrace', 'valgrind', 'parallel', 'rlwrap', 'unbuffer', 'faketime', 'fakeroot', 'firejail', 'bwrap', 'proot',
  'torsocks', 'proxychains', 'proxychains4', 'catchsegv', 'numactl', 'cpulimit', 'daemonize', 'start-stop-daemon',
  'run-parts', 'at', 'batch', 'screen', 'tmux', 'dtach', 'setpriv', 'capsh', 'chpst', 'setuidgid', 'softlimit',
  'envdir', 'envuidgid', 'eatmydata', 'nocache', 'xvfb-run', 'dbus-run-session', 'dbus-launch', 'ssh-agent', 'sg',
  'newgrp', 'entr', 'cgexec', 'schedtool', 'trickle', 'flatpak-spawn', 'machinectl', 'dtrace', 'perf',
]);
