/**
 * The command allowlist checker.
 *
 * checkCommand({ allowlist, command }) decides, before anything runs, whether an exec may run.
 * It is pure (no I/O), synchronous and fail-closed: anything it does not explicitly understand is
 * refused. A refusal names the program (or the construct) and says why, in words meant for the
 * API user; the route answers it with 403 `command_not_allowed`.
 *
 * Semantics
 * ---------
 * - Empty allowlist: every command is allowed, without parsing.
 * - String commands are run by `/bin/sh -c`, which may be dash, bash, busybox ash or ksh. They
 *   are parsed as POSIX sh (parse.ts); where those shells read the same text differently, the
 *   checker takes the reading that finds more commands, or refuses.
 * - Every simple command in every pipeline, and-or list, subshell, brace group, if/while/until/
 *   for/case body and function body is checked. Inputs over 64 KiB and nesting deeper than 16
 *   levels (compound commands plus nested shell strings and wrappers) are refused.
 * - Program names are compared by basename, and a program given as a path must be in the
 *   system's program directories (program-dirs.ts): `/usr/bin/ls` is `ls`, while `./ls`,
 *   `bin/ls` and `/workspace/ls` are refused, and every command starts with PATH set to those
 *   directories: a file the sandbox writes and marks executable under an allowed name never runs.
 *   A path is normalised first (`/usr/bin/../../tmp/ls` is `/tmp/ls`); a name ending in `/`, `.`
 *   or `..` is refused.
 * - The program word must be a literal after quote removal: `'l''s'`, `l\s`, `"ls"` are `ls`. A
 *   program word with an expansion (`$CMD`, `${X}`), a glob (`l?`), a leading tilde, a brace
 *   expansion (`{ls,rm}`) or `$'…'`/`$"…"` quoting is refused.
 * - Command substitution (`$(…)`, backquotes) and process substitution (`<(…)`, `>(…)`) are refused
 *   wherever they appear: arguments, double quotes, unquoted here-documents, redirection targets,
 *   assignments, `${x:-…}` words.
 * - Parameter expansion in arguments is fine in its POSIX forms (`$x`, `${x}`, `${#x}`,
 *   `${x:-w}`, `${x%p}`…); bash-only forms (`${!x}`, `${x[i]}`, `${x:1:2}`, `${x/a/b}`, `${x@P}`…)
 *   are refused because bash evaluates array subscripts and prompt strings, which can run commands.
 *   For the same reason arithmetic (`$((…))`) may hold only numbers and operators, not variables,
 *   and `((…))`, `let`, `declare`/`typeset`, `[[ … ]]` are refused.
 * - `$'…'` without backslashes is an argument like any other; with backslashes it is refused
 *   (bash decodes it, dash does not, and they then split the text differently).
 * - Shell builtins that cannot start programs are always allowed without being on the list when
 *   written as a bare name: `:`, `true`, `false`, `echo`, `printf`, `test`, `[`, `cd`, `pwd`,
 *   `exit`, `return`, `break`, `continue`, `shift`, `set`, `unset`, `export`, `readonly`, `local`,
 *   `read`, `wait`, `umask`, `ulimit`, `times`, `type`, `hash`, `getopts`, `kill`, `jobs`,
 *   `alias` (listing only), `unalias`. Their arguments are checked where bash could turn them
 *   into code: variable names given to `read`, `unset`, `export`, `getopts`, `printf -v` and
 *   `test -v` must be literal names (bash evaluates `a[$(cmd)]` subscripts), `set -k`,
 *   `hash -p`, `jobs -x` are refused. Run by a wrapper (`env echo`), `echo`, `printf`, `test`,
 *   `[`, `true`, `false`, `pwd` and `kill` are the harmless coreutils programs and stay allowed.
 * - Builtins that run text: `eval` (all arguments literal: their joined text is checked as a
 *   script), `trap` (the literal action is checked as a script), `command` (its command is
 *   checked; `command -v` is allowed), `exec` (its command is checked; `exec` with only
 *   redirections is allowed; options are refused: bash takes `-a NAME`, dash would run a program
 *   named `-a`). `source`/`.`, `fc`, `enable`, `builtin`, `let`, `declare`,
 *   `typeset`, `mapfile`, `readarray`, `shopt`, `coproc`, `select`, `function`, `bind`,
 *   `complete`, `compgen` and `alias NAME=…` are refused.
 * - Function definitions are allowed; their bodies are checked. Calling a function is checked like
 *   running a program of that name (the checker cannot know whether the definition ran first).
 * - Wrappers that run another program must be on the list themselves, and then what they run is
 *   checked too, after parsing their options like the real program does (an option the checker
 *   does not know is refused): env (assignments and the command; -S refused), nohup, nice,
 *   timeout, stdbuf, setsid, chroot, ionice, taskset, sudo (-i/-s/-e refused), strace (-o |cmd
 *   refused), time (as bash's keyword and as /usr/bin/time), busybox APPLET, watch (-x: the
 *   command; otherwise its joined text, which watch runs with sh -c), flock (command or -c text),
 *   xargs (the command, which may then not be another wrapper because xargs appends run-time
 *   data; with -I the replacement string may not appear where it would name a program or code),
 *   find -exec/-execdir/-ok/-okdir (the command up to `;` or `{} +`; `{}` may not be the
 *   program or inside shell text). Wrappers whose options are not parsed (nsenter, unshare,
 *   doas, parallel, script, …) are refused even when on the list.
 * - Shells: sh, bash, dash, ash, ksh, mksh, posh, yash with `-c TEXT` (TEXT literal) are allowed
 *   when the shell is on the list and TEXT passes the same check, recursively. A shell running a
 *   script file or reading standard input, or started as a login/interactive shell, is refused.
 *   zsh, fish, csh, tcsh and other shells whose language is not POSIX sh are refused.
 * - Interpreters (python, perl, node, ruby, awk, …) and programs that can run commands through
 *   their own arguments or configuration (sed's `e`, git aliases and hooks, tar
 *   --to-command, make, ssh, …) are ordinary programs: allowing one allows everything it can do.
 *   The checker only refuses git's global `-c`/`--config-env`/`--exec-path=`.
 * - Assignments to variables that decide what runs are refused, before a command, alone, through
 *   export/readonly/local/read/for/getopts/printf -v, `${VAR:=…}`, env/sudo/strace -E: PATH,
 *   LD_*, BASH_ENV, ENV, BASH_FUNC_*, SHELLOPTS, BASHOPTS, PS4, IFS (except `IFS=… read`),
 *   SHELL, PAGER/EDITOR and git's command variables (see env.ts).
 * - Redirections are allowed (`> f`, `2>&1`, `< in`, here-strings); bash's `&>` is refused (dash
 *   reads it as `&` followed by a command). Here-documents are allowed; an unquoted one may not
 *   hold substitutions, and may not end a line with a backslash (dash and bash disagree there).
 * - `cmd1 |& cmd2` is checked as a pipeline. Comments are ignored. `A=1 ls` checks `ls`.
 * - Argv commands: argv[0] is the program (by basename, exactly as given: no quote removal), run
 *   without a shell, so builtins do not apply; wrappers are handled as above (`["sh","-c","rm"]`
 *   needs `sh` and `rm`). An empty argv, or an argument holding NUL, is refused.
 */
import { isProtectedVariable, protectedVariableReason } from './env.ts';
import { programPathProblem } from './program-dirs.ts';
import { MAX_NESTING, Refusal, literalWord, parseScript, type Command, type Word } from './parse.ts';
import { NO_PAYLOAD, OPAQUE_RUNNERS, OTHER_SHELLS, WRAPPERS, type Checker, type Level, type PayloadContext } from './wrappers.ts';

export type CheckInput = { allowlist: readonly string[]; command: string | readonly string[] };
export type CheckResult = { allowed: true } | { allowed: false; program: string; reason: string };

export const MAX_COMMAND_BYTES = 64 * 1024;

const ALLOWED: CheckResult = { allowed: true };
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ASSIGNMENT_RAW = /^([A-Za-z_][A-Za-z0-9_]*)(=|$)/;

/** Programs that stay allowed when a wrapper runs them by bare name (coreutils, harmless). */
const HARMLESS_PROGRAMS = new Set(['echo', 'printf', 'test', '[', 'true', 'false', 'pwd', 'kill']);

const REFUSED_BUILTINS: ReadonlyMap<string, string> = new Map([
  ['source', 'runs the commands of a file, which cannot be checked'],
  ['.', 'runs the commands of a file, which cannot be checked'],
  ['fc', 'runs commands from the shell history'],
  ['enable', 'can load builtins from a shared library'],
  ['builtin', 'is bash-only and not supported; call the builtin directly'],
  ['let', 'evaluates arithmetic on variables, whose values bash can turn into commands'],
  ['declare', 'can give variables attributes under which bash evaluates their values as code'],
  ['typeset', 'can give variables attributes under which bash evaluates their values as code'],
  ['mapfile', 'assigns array elements (bash evaluates array subscripts)'],
  ['readarray', 'assigns array elements (bash evaluates array subscripts)'],
  ['shopt', 'changes how bash parses commands'],
  ['coproc', 'starts a coprocess; run the command with `&` instead'],
  ['select', 'is not supported'],
  ['function', 'is bash syntax; define functions as `name() { …; }`'],
  ['bind', 'is not supported'],
  ['complete', 'is not supported'],
  ['compgen', 'is not supported'],
]);

interface Ctx {
  allowlist: readonly string[];
  allowSet: ReadonlySet<string> | null;
  depth: number;
}

function isAllowed(ctx: Ctx, name: string): boolean {
  // short lists: a linear scan beats building a Set on every check
  if (ctx.allowlist.length <= 16) return ctx.allowlist.includes(name);
  ctx.allowSet ??= new Set(ctx.allowlist);
  return ctx.allowSet.has(name);
}

function refuse(program: string, reason: string): never {
  throw new Refusal(program, reason);
}

function notOnList(name: string): never {
  refuse(name, `\`${name}\` is not on the command allowlist`);
}

function requireLiteral(builtin: string, w: Word, why: string): string {
  if (w.value === null) refuse(builtin, `\`${builtin}\`: \`${w.raw}\` must be a literal word here (${why})`);
  return w.value;
}

/** A variable name given to a builtin: literal, no subscript, not protected. */
function checkVariableName(builtin: string, name: string): void {
  if (!NAME.test(name)) {
    refuse(builtin, `\`${builtin}\`: \`${name}\` is not a plain variable name (bash evaluates array subscripts, which can run commands)`);
  }
  if (isProtectedVariable(name)) refuse(builtin, protectedVariableReason(name));
}

function checkAssigns(program: string, w: Word): void {
  for (const name of w.assigns) if (isProtectedVariable(name)) refuse(program, protectedVariableReason(name));
}

// ---------------------------------------------------------------------------------------------
// builtins (shell level, bare names)

type Builtin = (args: readonly Word[], ctx: Ctx, pc: PayloadContext) => void;

const anyArgs: Builtin = () => {};

function checkTest(name: string): Builtin {
  // bash's `test -v NAME` / `-R NAME` evaluate an array subscript in NAME. An argument that is an
  // expansion may itself turn out to be `-v`, so the argument after it must be a literal
  // without `[`; expansions must also stay one argument each.
  return (args) => {
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a.value === null && !a.singleField) {
        refuse(name, `\`${name}\`: quote \`${a.raw}\` (an unquoted expansion may become several arguments)`);
      }
      const couldBeV = a.value === null || a.value === '-v' || a.value === '-R';
      const b = args[i + 1];
      if (couldBeV && b !== undefined && (b.value === null || b.value.includes('['))) {
        refuse(name, `\`${name}\`: \`${a.raw} ${b.raw}\` could test a variable whose array subscript bash evaluates as code`);
      }
    }
  };
}

const checkPrintf: Builtin = (args) => {
  for (let i = 0; i < args.length; i++) {
    const v = requireLiteral('printf', args[i]!, 'an expanded first argument could be the option -v');
    if (v === '--' || !v.startsWith('-v')) return;
    const variable = v.length > 2 ? v.slice(2) : args[++i];
    if (variable === undefined) return;
    checkVariableName('printf', typeof variable === 'string' ? variable : requireLiteral('printf', variable, 'it names a variable'));
  }
};

const checkSet: Builtin = (args) => {
  for (let i = 0; i < args.length; i++) {
    const v = requireLiteral('set', args[i]!, 'an expanded argument could be an option');
    if (v === '--' || v === '-') return;
    if (!(v.startsWith('-') || v.startsWith('+')) || v.length < 2) return;
    for (const ch of v.slice(1)) {
      if (ch === 'k') refuse('set', '`set -k` makes assignments anywhere on a command line change the environment');
      if (ch === 'o') {
        const opt = args[++i];
        if (opt === undefined) return;
        if (requireLiteral('set', opt, 'it names an option') === 'keyword') {
          refuse('set', '`set -o keyword` makes assignments anywhere on a command line change the environment');
        }
      }
    }
  }
};

const checkUnset: Builtin = (args) => {
  for (const a of args) {
    const v = requireLiteral('unset', a, 'it names a variable');
    if (/^-[fvn]+$/.test(v)) continue;
    if (v.includes('[')) refuse('unset', '`unset` of an array element is not allowed (bash evaluates the subscript)');
  }
};

function checkDeclaration(name: string): Builtin {
  return (args) => {
    for (const a of args) {
      if (a.raw === '-p' || a.raw === '--') continue;
      const m = ASSIGNMENT_RAW.exec(a.raw);
      if (!m) refuse(name, `\`${name}\`: \`${a.raw}\` must be NAME or NAME=value`);
      if (!a.singleField) refuse(name, `\`${name}\`: quote the value in \`${a.raw}\` (an unquoted expansion may become several assignments)`);
      if (m[2] === '=' && isProtectedVariable(m[1]!)) refuse(name, protectedVariableReason(m[1]!));
    }
  };
}

const checkRead: Builtin = (args) => {
  let i = 0;
  for (; i < args.length; i++) {
    const v = requireLiteral('read', args[i]!, 'an expanded argument could be an option');
    if (v === '--') {
      i++;
      break;
    }
    if (!v.startsWith('-') || v === '-') break;
    for (let j = 1; j < v.length; j++) {
      const ch = v[j]!;
      if ('rse'.includes(ch)) continue;
      if ('pdtnNui'.includes(ch) || ch === 'a') {
        let value: string | null;
        if (j + 1 < v.length) value = v.slice(j + 1);
        else {
          const w = args[++i];
          if (w === undefined) refuse('read', `\`read -${ch}\` needs an argument`);
          if (!w.singleField) refuse('read', `\`read\`: quote \`${w.raw}\``);
          value = w.value;
        }
        if (ch === 'a') checkVariableName('read', value ?? '$');
        break;
      }
      refuse('read', `\`read -${ch}\` is not supported`);
    }
  }
  for (; i < args.length; i++) checkVariableName('read', requireLiteral('read', args[i]!, 'it names a variable'));
};

const checkWait: Builtin = (args) => {
  for (const a of args) {
    if (a.raw === '$!' || a.raw === '${!}' || a.raw === '"$!"') continue;
    const v = requireLiteral('wait', a, 'only process ids, job ids and $! are allowed');
    if (!/^([0-9]+|%[^\s]*|-[nf]+)$/.test(v)) refuse('wait', `\`wait ${v}\` is not supported`);
  }
};

const checkGetopts: Builtin = (args) => {
  const variable = args[1];
  if (variable !== undefined) checkVariableName('getopts', requireLiteral('getopts', variable, 'it names a variable'));
};

const checkHash: Builtin = (args) => {
  for (const a of args) {
    const v = requireLiteral('hash', a, 'an expanded argument could be an option');
    if (v.startsWith('-') && v !== '-r' && v !== '-t') refuse('hash', `\`hash ${v}\` is not allowed (hash -p makes a name run any file)`);
  }
};

const checkJobs: Builtin = (args) => {
  for (const a of args) {
    const v = requireLiteral('jobs', a, 'an expanded argument could be an option');
    if (v.startsWith('-') && v.includes('x')) refuse('jobs', '`jobs -x` runs a command');
  }
};

const checkAlias: Builtin = (args) => {
  for (const a of args) if (a.raw !== '-p') refuse('alias', 'defining aliases is not allowed (an alias can make any name run any command)');
};

const checkEval: Builtin = (args, ctx) => {
  const text = args.map((a) => requireLiteral('eval', a, 'eval runs its arguments as a command')).join(' ');
  checkScriptAt(text, ctx);
};

const checkTrap: Builtin = (args, ctx) => {
  let i = 0;
  if (args[0]?.value === '--') i++;
  const action = args[i];
  if (action === undefined) return;
  const v = requireLiteral('trap', action, 'trap runs its action as a command');
  if (v.startsWith('-') || /^[0-9]+$/.test(v)) return;
  checkScriptAt(v, ctx);
};

const checkCommandBuiltin: Builtin = (args, ctx, pc) => {
  let i = 0;
  for (; i < args.length; i++) {
    const v = requireLiteral('command', args[i]!, 'an expanded argument could be an option or a program');
    if (v === '--') {
      i++;
      break;
    }
    if (!v.startsWith('-')) break;
    if (!/^-[pvV]+$/.test(v)) refuse('command', `\`command ${v}\` is not supported`);
    if (/[vV]/.test(v)) return; // only describes the command
  }
  if (i < args.length) checkArgv(args.slice(i), ctx, 'shell', pc);
};

const checkExecBuiltin: Builtin = (args, ctx, pc) => {
  let i = 0;
  for (; i < args.length; i++) {
    const v = requireLiteral('exec', args[i]!, 'an expanded argument could be an option or a program');
    if (v === '--') {
      i++;
      break;
    }
    if (!v.startsWith('-')) break;
    // bash takes -a/-c/-l here, dash none (it would run a program named `-a`): refuse both readings
    refuse('exec', `\`exec ${v}\` is not supported`);
  }
  if (i < args.length) checkArgv(args.slice(i), ctx, 'exec', pc);
};

const BUILTINS: ReadonlyMap<string, Builtin> = new Map<string, Builtin>([
  ...[':', 'true', 'false', 'echo', 'pwd', 'cd', 'exit', 'return', 'break', 'continue', 'shift', 'umask', 'ulimit', 'times', 'kill', 'unalias', 'type'].map(
    (n): [string, Builtin] => [n, anyArgs],
  ),
  ['test', checkTest('test')],
  ['[', checkTest('[')],
  ['printf', checkPrintf],
  ['set', checkSet],
  ['unset', checkUnset],
  ['export', checkDeclaration('export')],
  ['readonly', checkDeclaration('readonly')],
  ['local', checkDeclaration('local')],
  ['read', checkRead],
  ['wait', checkWait],
  ['getopts', checkGetopts],
  ['hash', checkHash],
  ['jobs', checkJobs],
  ['alias', checkAlias],
  ['eval', checkEval],
  ['trap', checkTrap],
  ['command', checkCommandBuiltin],
  ['exec', checkExecBuiltin],
]);

// ---------------------------------------------------------------------------------------------
// programs

function programName(w: Word, level: Level, pc: PayloadContext): { name: string; bare: boolean } {
  if (w.raw === '[[') refuse('[[', 'bash `[[ … ]]` is not supported; use `[ … ]`');
  if (w.value === null) {
    refuse(w.raw, `the program name \`${w.raw}\` is not a literal word (it holds an expansion, a glob or special quoting), so the program cannot be checked`);
  }
  const value = w.value;
  if (value === '.' && level === 'shell') refuse('.', `\`.\` ${REFUSED_BUILTINS.get('.')}`);
  if (pc.taint !== null && value.includes(pc.taint)) {
    refuse(value, `the program \`${value}\` would be taken from run-time data (\`${pc.taint}\` is replaced)`);
  }
  if (value === '') refuse("''", 'the program name is empty');
  if (value.includes('\0')) refuse(value, 'the program name holds a NUL character');
  const slash = value.lastIndexOf('/');
  const name = slash === -1 ? value : value.slice(slash + 1);
  if (name === '' || name === '.' || name === '..') refuse(value, `\`${value}\` does not name a program`);
  const outside = programPathProblem(value);
  if (outside !== undefined) refuse(value, outside);
  return { name, bare: slash === -1 };
}

function checkArgv(words: readonly Word[], ctx: Ctx, level: Level, pc: PayloadContext): void {
  if (ctx.depth > MAX_NESTING) refuse('nesting', `the command nests more than ${MAX_NESTING} levels deep`);
  const { name, bare } = programName(words[0]!, level, pc);
  const args = words.slice(1);
  if (bare && level === 'shell') {
    const refused = REFUSED_BUILTINS.get(name);
    if (refused !== undefined) refuse(name, `\`${name}\` ${refused}`);
    const builtin = BUILTINS.get(name);
    if (builtin !== undefined) {
      ctx.depth++;
      builtin(args, ctx, pc);
      ctx.depth--;
      return;
    }
  }
  if (bare && level === 'exec' && HARMLESS_PROGRAMS.has(name)) return;
  if (!isAllowed(ctx, name)) notOnList(name);
  if (OPAQUE_RUNNERS.has(name)) {
    refuse(name, `\`${name}\` runs other programs in ways the checker cannot follow, so it is refused even though it is on the allowlist`);
  }
  if (OTHER_SHELLS.has(name)) {
    refuse(name, `\`${name}\` is a shell whose language the checker does not parse, so what it runs cannot be checked`);
  }
  const wrapper = WRAPPERS.get(name);
  if (wrapper === undefined) {
    return;
  }
  ctx.depth++;
  wrapper(name, args, makeChecker(ctx), pc, level);
  ctx.depth--;
}

function makeChecker(ctx: Ctx): Checker {
  return {
    argv: (words, level, pc) => checkArgv(words, ctx, level, pc),
    script: (text) => checkScriptAt(text, ctx),
  };
}

// ---------------------------------------------------------------------------------------------
// scripts

function checkScriptAt(text: string, ctx: Ctx): void {
  if (ctx.depth > MAX_NESTING) refuse('nesting', `the command nests more than ${MAX_NESTING} levels deep`);
  if (text.includes('\0')) refuse('NUL', 'the command holds a NUL character');
  const commands = parseScript(text, ctx.depth);
  ctx.depth++;
  for (const cmd of commands) walk(cmd, ctx);
  ctx.depth--;
}

function walk(cmd: Command, ctx: Ctx): void {
  switch (cmd.type) {
    case 'simple': {
      const program = cmd.words[0]?.value ?? cmd.words[0]?.raw ?? '';
      for (const a of cmd.assignments) {
        checkAssigns(program || a.name, a.word);
        if (isProtectedVariable(a.name) && !(a.name === 'IFS' && program === 'read' && cmd.words[0]!.raw === 'read')) {
          refuse(program || `${a.name}=`, protectedVariableReason(a.name));
        }
      }
      for (const w of cmd.words) checkAssigns(program, w);
      for (const w of cmd.redirects) checkAssigns(program, w);
      if (cmd.words.length > 0) checkArgv(cmd.words, ctx, 'shell', NO_PAYLOAD);
      return;
    }
    case 'function':
      if (cmd.name.value === null || cmd.name.value === '') {
        refuse(cmd.name.raw, `the function name \`${cmd.name.raw}\` is not a literal word`);
      }
      ctx.depth++;
      walk(cmd.body, ctx);
      ctx.depth--;
      return;
    case 'compound':
      if (cmd.loopVariable !== undefined) {
        checkVariableName('for', requireLiteral('for', cmd.loopVariable, 'it names the loop variable'));
      }
      for (const w of cmd.words) checkAssigns('case', w);
      ctx.depth++;
      for (const inner of cmd.body) walk(inner, ctx);
      ctx.depth--;
      return;
    default: {
      const unknown: never = cmd;
      refuse('?', `unsupported construct ${String(unknown)}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------

function utf8Length(text: string): number {
  return text.length * 3 <= MAX_COMMAND_BYTES ? text.length : Buffer.byteLength(text, 'utf8');
}

/** Decides whether `command` may run under `allowlist`. Never throws. */
export function checkCommand(input: CheckInput): CheckResult {
  const { allowlist, command } = input;
  if (allowlist.length === 0) return ALLOWED;
  const ctx: Ctx = { allowlist, allowSet: null, depth: 0 };
  try {
    if (typeof command === 'string') {
      if (utf8Length(command) > MAX_COMMAND_BYTES) {
        refuse('command', `the command is longer than ${MAX_COMMAND_BYTES / 1024} KiB`);
      }
      checkScriptAt(command, ctx);
    } else {
      if (command.length === 0) refuse('command', 'the command is empty');
      let bytes = 0;
      for (const arg of command) {
        if (typeof arg !== 'string') refuse('command', 'every argument must be a string');
        if (arg.includes('\0')) refuse(command[0] ?? 'command', 'an argument holds a NUL character');
        bytes += utf8Length(arg) + 1;
      }
      if (bytes > MAX_COMMAND_BYTES) refuse('command', `the command is longer than ${MAX_COMMAND_BYTES / 1024} KiB`);
      checkArgv(command.map(literalWord), ctx, 'exec', NO_PAYLOAD);
    }
    return ALLOWED;
  } catch (err) {
    if (err instanceof Refusal) return { allowed: false, program: err.program, reason: err.reason };
    if (err instanceof RangeError) {
      // stack exhaustion on pathological input: refuse rather than crash
      return { allowed: false, program: 'command', reason: 'the command is too complex to check' };
    }
    throw err;
  }
}
