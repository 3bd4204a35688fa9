import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkCommand, checkEnvironment, MAX_COMMAND_BYTES } from '../../shared/allowlist/index.ts';

/** The allowlist most rows run under. `rm`, `evil`, `id`, `curl` are deliberately absent. */
const LIST = [
  'ls', 'cat', 'grep', 'sort', 'wc', 'head', 'sh', 'bash', 'env', 'xargs', 'find', 'nice', 'timeout', 'nohup',
  'time', 'git', 'python3', 'sudo', 'su', 'watch', 'flock', 'busybox', 'strace', 'stdbuf', 'setsid', 'zsh', 'nsenter',
];

type Row = {
  command: string | string[];
  /** 'allow', or the program the refusal must name (and optionally a phrase of its reason). */
  expect: 'allow' | { program: string; reason?: string };
  list?: string[];
};

const allow = 'allow' as const;
const no = (program: string, reason?: string): Row['expect'] => (reason === undefined ? { program } : { program, reason });
const NOT_LISTED = 'is not on the command allowlist';
const SUBST = 'cannot be checked';

const TABLE: Row[] = [
  // plain commands and lists
  { command: 'ls -la', expect: allow },
  { command: 'cat a.txt | grep -v x | sort -u > out.txt && wc -l out.txt', expect: allow },
  { command: 'rm -rf /', expect: no('rm', NOT_LISTED) },
  { command: 'ls; rm x', expect: no('rm', NOT_LISTED) },
  { command: 'ls && rm x', expect: no('rm', NOT_LISTED) },
  { command: 'ls || rm x', expect: no('rm', NOT_LISTED) },
  { command: 'ls | rm x', expect: no('rm', NOT_LISTED) },
  { command: 'ls & rm x', expect: no('rm', NOT_LISTED) },
  { command: 'ls\nrm x', expect: no('rm', NOT_LISTED) },
  { command: 'ls |& rm x', expect: no('rm', NOT_LISTED) },
  { command: 'ls 2>&1 |& cat', expect: allow },
  { command: '! rm x', expect: no('rm', NOT_LISTED) },
  { command: 'ls # ; rm x', expect: allow },
  { command: 'ls#; rm x', expect: no('ls#', NOT_LISTED) }, // `#` inside a word starts no comment
  { command: 'ls -la; ', expect: allow },
  { command: '', expect: allow },
  { command: 'ls & ;', expect: no(';', 'syntax error') },
  // compound commands
  { command: '(rm x)', expect: no('rm', NOT_LISTED) },
  { command: '( (ls) ) 2>/dev/null', expect: allow },
  { command: '{ rm x; }', expect: no('rm', NOT_LISTED) },
  { command: '{ ls; cat f; } > out', expect: allow },
  { command: 'if ls; then rm x; fi', expect: no('rm', NOT_LISTED) },
  { command: 'if ! ls; then echo no; elif cat f; then :; else head f; fi', expect: allow },
  { command: 'for f in a b; do rm "$f"; done', expect: no('rm', NOT_LISTED) },
  { command: 'for f in *.txt; do wc -l "$f"; done', expect: allow },
  { command: 'while ls; do rm x; done', expect: no('rm', NOT_LISTED) },
  { command: 'until cat f; do sleep 1; done', expect: no('sleep', NOT_LISTED) },
  { command: 'case "$x" in a|b) ls ;; *) rm x ;; esac', expect: no('rm', NOT_LISTED) },
  { command: 'case x in (a) ls;; esac', expect: allow },
  { command: 'f() { rm x; }; f', expect: no('rm', NOT_LISTED) },
  { command: 'ls() { cat "$@"; }; ls f', expect: allow },
  { command: 'f() { ls; }; f', expect: no('f', NOT_LISTED) },
  { command: 'while IFS= read -r line; do echo "$line"; done < in.txt', expect: allow },
  // quoting and escaping of the program name
  { command: "'r'm x", expect: no('rm', NOT_LISTED) },
  { command: 'r\\m x', expect: no('rm', NOT_LISTED) },
  { command: '"rm" x', expect: no('rm', NOT_LISTED) },
  { command: 'r""m x', expect: no('rm', NOT_LISTED) },
  { command: "'l''s' -l", expect: allow },
  { command: 'l\\s -l', expect: allow },
  { command: 'r\\\nm x', expect: no('rm', NOT_LISTED) },
  { command: 'ls \\\n  -la', expect: allow },
  { command: "'if' x", expect: no('if', NOT_LISTED) },
  { command: "$'\\x72m' x", expect: no("$'\\x72m'", 'ANSI-C') },
  { command: "$'rm' x", expect: no("$'rm'", 'not a literal') },
  { command: "echo $'abc'", expect: allow },
  { command: "ls $'a\\nb'", expect: no("$'a\\nb'", 'ANSI-C') },
  // paths
  { command: '/bin/ls /', expect: allow },
  // A path must be into the system's program directories: a file the sandbox wrote under an
  // allowed name is not the program the allowlist names.
  { command: '/usr/local/bin/ls -l', expect: allow },
  { command: '/usr/bin//ls', expect: allow },
  { command: './ls', expect: no('./ls', 'relative path') },
  { command: 'bin/ls -la', expect: no('bin/ls', 'relative path') },
  { command: '../../usr/bin/ls', expect: no('../../usr/bin/ls', 'relative path') },
  { command: '/workspace/bin/ls', expect: no('/workspace/bin/ls', 'outside the system') },
  { command: '/tmp/ls', expect: no('/tmp/ls', 'outside the system') },
  { command: '/usr/bin/../../workspace/ls', expect: no('/usr/bin/../../workspace/ls', 'outside the system') },
  { command: '/usr/bin/sub/ls', expect: no('/usr/bin/sub/ls', 'outside the system') },
  { command: 'nohup /workspace/ls', expect: no('/workspace/ls', 'outside the system') },
  { command: 'command /workspace/ls', expect: no('/workspace/ls', 'outside the system') },
  { command: 'exec ./ls', expect: no('./ls', 'relative path') },
  { command: '/usr/bin/rm x', expect: no('rm', NOT_LISTED) },
  { command: './rm x', expect: no('./rm', 'relative path') },
  { command: '/usr/bin/', expect: no('/usr/bin/', 'does not name a program') },
  { command: './echo hi', expect: no('./echo', 'relative path') },
  // expansions in the program position
  { command: '$CMD x', expect: no('$CMD', 'not a literal') },
  { command: '"$CMD" x', expect: no('"$CMD"', 'not a literal') },
  { command: '${X} x', expect: no('${X}', 'not a literal') },
  { command: 'l? x', expect: no('l?', 'not a literal') },
  { command: '[l]s', expect: no('[l]s', 'not a literal') },
  { command: '~/bin/ls', expect: no('~/bin/ls', 'not a literal') },
  { command: '{ls,rm} x', expect: no('{ls,rm}', 'not a literal') },
  { command: 'x=rm; $x y', expect: no('$x', 'not a literal') },
  // substitutions anywhere
  { command: '"$(echo rm)" x', expect: no('$(echo rm)', SUBST) },
  { command: 'echo "$(rm x)"', expect: no('$(rm x)', SUBST) },
  { command: 'echo `rm x`', expect: no('`rm x`', SUBST) },
  { command: 'echo "`rm x`"', expect: no('`rm x`', SUBST) },
  { command: 'ls > "$(rm x)"', expect: no('$(rm x)', SUBST) },
  { command: 'A=$(rm x) ls', expect: no('$(rm x)', SUBST) },
  { command: 'echo ${x:=$(rm x)}', expect: no('$(rm x)', SUBST) },
  { command: 'echo "${x:-`rm x`}"', expect: no('`rm x`', SUBST) },
  { command: '$\\\n(rm x)', expect: no('$(rm x)', SUBST) },
  { command: 'cat <(rm x)', expect: no('<(rm x)', 'process substitution') },
  { command: 'ls >(rm x)', expect: no('>(rm x)', 'process substitution') },
  { command: "echo '$(rm x)' \\$\\(rm\\) \"\\$(rm)\"", expect: allow },
  // here-documents and here-strings
  { command: 'cat <<EOF\n$(rm x)\nEOF', expect: no('$(rm x)', SUBST) },
  { command: "cat <<'EOF'\n$(rm x) `rm`\nEOF\nls", expect: allow },
  { command: 'cat <<EOF\nhello $USER ${HOME:-/} $((1 + 2))\nEOF', expect: allow },
  { command: 'cat <<EOF; rm x\nbody\nEOF', expect: no('rm', NOT_LISTED) },
  { command: 'cat <<EOF\nEO\\\nF\nrm x\nEOF', expect: no('<<EOF', 'backslash') },
  { command: 'cat <<EOF\nno end', expect: no('<<EOF', 'not terminated') },
  { command: 'cat <<-EOF\n\tbody\n\tEOF\nls', expect: allow },
  { command: 'cat <<< "$HOME"', expect: allow },
  // arithmetic and parameter expansion in arguments
  { command: 'echo $((1 + 2 * 3)) $(( (16#ff) ))', expect: allow },
  { command: 'echo $((x + 1))', expect: no('$((x + 1))', 'arithmetic on variables') },
  { command: 'echo ${x:-default} ${#x} ${x%.txt} $1 $# $?', expect: allow },
  { command: 'echo ${!x}', expect: no('${!x}', 'POSIX') },
  { command: 'echo ${x[$i]}', expect: no('${x[$i]}', 'POSIX') },
  { command: 'echo ${x@P}', expect: no('${x@P}', 'POSIX') },
  { command: '((x))', expect: no('((', 'arithmetic') },
  { command: 'echo $[1+2]', expect: no('$[', 'arithmetic') },
  // builtins
  { command: 'cd /tmp && pwd && echo ok && printf "%s\\n" x && true && : && test -f x && [ -d y ]', expect: allow },
  { command: 'eval rm x', expect: no('rm', NOT_LISTED) },
  { command: "eval 'ls -l; cat f'", expect: allow },
  { command: 'eval "$CMD"', expect: no('eval', 'literal') },
  { command: 'exec rm x', expect: no('rm', NOT_LISTED) },
  { command: 'exec 3>&1 >log', expect: allow },
  { command: 'exec -a name ls', expect: no('exec', '-a') },
  { command: 'time -v ls', expect: no('-v', NOT_LISTED) }, // bash's `time` keyword would run a program named -v
  { command: 'command rm x', expect: no('rm', NOT_LISTED) },
  { command: 'command -v rm', expect: allow },
  { command: "trap 'rm -f /tmp/x' EXIT", expect: no('rm', NOT_LISTED) },
  { command: "trap 'ls' EXIT; trap - INT", expect: allow },
  { command: 'source ./env.sh', expect: no('source', 'file') },
  { command: '. ./env.sh', expect: no('.', 'file') },
  { command: 'alias ls=rm', expect: no('alias', 'alias') },
  { command: 'builtin cd /', expect: no('builtin') },
  { command: 'let x=1', expect: no('let') },
  { command: 'declare -i n', expect: no('declare') },
  { command: '[[ -f x ]]', expect: no('[[') },
  { command: 'coproc rm x', expect: no('coproc') },
  { command: 'function f { ls; }', expect: no('function') },
  { command: "read 'a[$(rm)]'", expect: no('read', 'variable name') },
  { command: "test -v 'a[$(rm)]'", expect: no('test', 'subscript') },
  { command: '[ "$a" "$b" ]', expect: no('[', 'subscript') },
  { command: '[ -n "$a" ] && [ "$a" = "$b" ]', expect: allow },
  { command: "printf -v 'a[$(rm)]' x", expect: no('printf', 'variable name') },
  { command: 'printf "$fmt" x', expect: no('printf', 'literal') },
  { command: 'set -k', expect: no('set') },
  { command: 'hash -p /tmp/evil ls', expect: no('hash') },
  { command: 'jobs -x rm', expect: no('jobs') },
  // variables that decide what runs
  { command: 'A=1 B="x y" ls', expect: allow },
  { command: 'PATH=/tmp/evil ls', expect: no('ls', 'PATH') },
  { command: 'PATH=/tmp/evil', expect: no('PATH=', 'PATH') },
  { command: 'export PATH=/tmp/evil', expect: no('export', 'PATH') },
  { command: 'LD_PRELOAD=/tmp/x.so ls', expect: no('ls', 'LD_PRELOAD') },
  { command: 'export LD_LIBRARY_PATH=/tmp', expect: no('export', 'LD_LIBRARY_PATH') },
  { command: 'BASH_ENV=/tmp/x bash -c ls', expect: no('bash', 'BASH_ENV') },
  { command: 'ENV=/tmp/x sh -c ls', expect: no('sh', 'ENV') },
  { command: 'IFS=/ ls', expect: no('ls', 'IFS') },
  { command: 'read PATH', expect: no('read', 'PATH') },
  { command: 'for PATH in /tmp; do ls; done', expect: no('for', 'PATH') },
  { command: ': ${PATH:=/tmp}', expect: no(':', 'PATH') },
  { command: 'export A="$x" B=1', expect: allow },
  { command: 'export A=$x', expect: no('export', 'quote') },
  // shells
  { command: 'sh -c "rm -rf /"', expect: no('rm', NOT_LISTED) },
  { command: "sh -c 'ls | wc -l'", expect: allow },
  { command: "bash -ec 'ls; cat f' name arg", expect: allow },
  { command: "sh -c 'sh -c \"rm x\"'", expect: no('rm', NOT_LISTED) },
  { command: 'sh -c "$CMD"', expect: no('sh', 'literal') },
  { command: 'sh script.sh', expect: no('sh', 'script') },
  { command: 'echo rm x | sh', expect: no('sh', 'standard input') },
  { command: "bash -lc 'ls'", expect: no('bash', 'login') },
  { command: "bash -O extglob -c 'ls'", expect: no('bash', 'parsed') },
  { command: "zsh -c 'ls'", expect: no('zsh', 'language') },
  { command: "dash -c 'ls'", expect: no('dash', NOT_LISTED) },
  // wrappers
  { command: 'env rm x', expect: no('rm', NOT_LISTED) },
  { command: 'env -i A=1 ls -l', expect: allow },
  { command: 'env -u HOME -- cat f', expect: allow },
  { command: "env -S 'rm x'", expect: no('env', '-S') },
  { command: 'env x/=/ls rm', expect: no('rm', NOT_LISTED) },
  { command: 'env LD_PRELOAD=/tmp/x.so ls', expect: no('env', 'LD_PRELOAD') },
  { command: 'env $X ls', expect: no('env', 'literal') },
  { command: 'nice -n 5 timeout -s KILL 10 ls', expect: allow },
  { command: 'nice -5 nohup rm x', expect: no('rm', NOT_LISTED) },
  { command: 'timeout 5 rm x', expect: no('rm', NOT_LISTED) },
  { command: 'timeout --bogus 5 ls', expect: no('timeout', 'not known') },
  { command: 'stdbuf -oL setsid -w ls', expect: allow },
  { command: 'time ls', expect: allow },
  { command: 'time -p rm x', expect: no('rm', NOT_LISTED) },
  { command: 'sudo -u app ls', expect: allow },
  { command: 'sudo rm x', expect: no('rm', NOT_LISTED) },
  { command: 'sudo -s', expect: no('sudo', 'shell') },
  { command: "su app -c 'ls'", expect: allow },
  { command: "su app -c 'rm x'", expect: no('rm', NOT_LISTED) },
  { command: 'su - app', expect: no('su', 'login') },
  { command: 'busybox rm x', expect: no('rm', NOT_LISTED) },
  { command: "busybox sh -c 'ls'", expect: allow },
  { command: 'watch -n 1 ls', expect: allow },
  { command: "watch 'ls; rm x'", expect: no('rm', NOT_LISTED) },
  { command: 'watch -x rm x', expect: no('rm', NOT_LISTED) },
  { command: "flock /tmp/lock -c 'rm x'", expect: no('rm', NOT_LISTED) },
  { command: 'flock /tmp/lock ls', expect: allow },
  { command: "strace -o '|rm x' ls", expect: no('strace', '-o') },
  { command: 'nsenter -t 1 ls', expect: no('nsenter', 'cannot follow') },
  { command: 'ionice -c 3 rm x', expect: no('ionice', NOT_LISTED) },
  // xargs
  { command: 'find . -name "*.log" | xargs rm', expect: no('rm', NOT_LISTED) },
  { command: 'ls | xargs -n1 wc -l', expect: allow },
  { command: 'ls | xargs', expect: allow },
  { command: 'ls | xargs env', expect: no('env', 'append') },
  { command: 'ls | xargs find', expect: no('find', 'append') },
  { command: "ls | xargs sh -c 'wc -l \"$@\"' _", expect: allow },
  { command: "ls | xargs -I{} sh -c 'cat {}'", expect: no('sh', 'run-time data') },
  { command: 'ls | xargs -I{} {}', expect: no('{}', 'run-time data') },
  { command: 'ls | xargs -I % cat %', expect: allow },
  // find
  { command: 'find . -exec rm {} \\;', expect: no('rm', NOT_LISTED) },
  { command: "find . -execdir rm {} ';'", expect: no('rm', NOT_LISTED) },
  { command: 'find . -ok rm {} +', expect: no('rm', NOT_LISTED) },
  { command: 'find . -name "*.c" -exec grep -l main {} +', expect: allow },
  { command: 'find . -name "$pat" -type f', expect: allow },
  { command: 'find . -exec {} \\;', expect: no('{}', 'run-time data') },
  { command: "find . -exec sh -c 'cat {}' \\;", expect: no('sh', 'run-time data') },
  { command: "find . -exec sh -c 'cat \"$1\"' _ {} \\;", expect: allow },
  { command: 'find "$dir" -exec ls \\;', expect: no('find', 'literal') },
  { command: 'find . -exec ls', expect: no('find', 'terminated') },
  // git
  { command: 'git log --oneline -n 5', expect: allow },
  { command: "git -c core.pager='rm x' log", expect: no('git', '-c') },
  { command: 'git --exec-path=/tmp log', expect: no('git', '--exec-path') },
  { command: 'git -C repo status', expect: allow },
  // interpreters are allowed when listed: allowing one allows what it can do
  { command: "python3 -c 'import os'", expect: allow },
  // bash-only redirection and syntax errors
  { command: 'ls &>/dev/null', expect: no('&>') },
  { command: 'ls )', expect: no(')', 'syntax error') },
  { command: "echo 'unterminated", expect: no("'", 'not closed') },
  // the same commands with rm on the list
  { command: 'sh -c "rm -f x"', list: [...LIST, 'rm'], expect: allow },
  { command: 'find . -name "*.tmp" -exec rm {} +', list: [...LIST, 'rm'], expect: allow },
  { command: 'ls | xargs rm', list: [...LIST, 'rm'], expect: allow },
  { command: 'rm x', list: ['ls'], expect: no('rm', NOT_LISTED) },
  // an empty list allows everything, even what does not parse
  { command: 'rm -rf / $(evil) ((', list: [], expect: allow },
  // argv form: argv[0] by basename, no shell, wrappers followed
  { command: ['ls', '-la'], expect: allow },
  { command: ['/usr/bin/ls', '$(rm x)', '; rm'], expect: allow },
  { command: ['rm', '-rf', '/'], expect: no('rm', NOT_LISTED) },
  { command: ['sh', '-c', 'rm -rf /'], expect: no('rm', NOT_LISTED) },
  { command: ['sh', '-c', 'ls | wc -l'], expect: allow },
  { command: ['env', 'A=1', 'rm'], expect: no('rm', NOT_LISTED) },
  { command: ['cd', '/'], expect: no('cd', NOT_LISTED) },
  { command: ['echo', 'hi'], expect: allow },
  { command: ['$(rm)'], expect: no('$(rm)', NOT_LISTED) },
  { command: [], expect: no('command', 'empty') },
];

for (const row of TABLE) {
  const list = row.list ?? LIST;
  test(`${JSON.stringify(row.command)} → ${row.expect === 'allow' ? 'allowed' : `refused (${row.expect.program})`}`, () => {
    const result = checkCommand({ allowlist: list, command: row.command });
    if (row.expect === 'allow') {
      assert.deepEqual(result, { allowed: true });
      return;
    }
    assert.equal(result.allowed, false, 'expected a refusal');
    assert.ok(!result.allowed);
    assert.equal(result.program, row.expect.program);
    assert.ok(result.reason.length > 10, 'the reason is a sentence');
    if (row.expect.reason !== undefined) {
      assert.ok(result.reason.includes(row.expect.reason), `reason ${JSON.stringify(result.reason)} should mention ${JSON.stringify(row.expect.reason)}`);
    }
  });
}

test('the table has at least 60 rows, both allowed and refused', () => {
  assert.ok(TABLE.length >= 60);
  assert.ok(TABLE.filter((r) => r.expect === 'allow').length >= 20);
  assert.ok(TABLE.filter((r) => r.expect !== 'allow').length >= 40);
});

test('inputs over 64 KiB are refused, for strings and argv', () => {
  const long = `ls ${'a'.repeat(MAX_COMMAND_BYTES)}`;
  const r1 = checkCommand({ allowlist: LIST, command: long });
  assert.ok(!r1.allowed && r1.reason.includes('64 KiB'));
  const r2 = checkCommand({ allowlist: LIST, command: ['ls', 'a'.repeat(MAX_COMMAND_BYTES)] });
  assert.ok(!r2.allowed && r2.reason.includes('64 KiB'));
  // multi-byte characters count as their UTF-8 length
  const r3 = checkCommand({ allowlist: LIST, command: `ls ${'é'.repeat(MAX_COMMAND_BYTES / 2)}` });
  assert.ok(!r3.allowed);
  assert.deepEqual(checkCommand({ allowlist: LIST, command: `ls ${'é'.repeat(MAX_COMMAND_BYTES / 4)}` }), { allowed: true });
});

test('nesting deeper than 16 levels is refused; 15 is fine', () => {
  const nest = (n: number): string => `${'( '.repeat(n)}ls${' )'.repeat(n)}`;
  assert.deepEqual(checkCommand({ allowlist: LIST, command: nest(15) }), { allowed: true });
  const deep = checkCommand({ allowlist: LIST, command: nest(17) });
  assert.ok(!deep.allowed && deep.reason.includes('nests more than 16'));
  const wrappers = checkCommand({ allowlist: LIST, command: `${'nice '.repeat(20)}ls` });
  assert.ok(!wrappers.allowed && wrappers.reason.includes('nests'));
  const evals = checkCommand({ allowlist: LIST, command: `${'eval '.repeat(20)}ls` });
  assert.ok(!evals.allowed && evals.reason.includes('nests'));
  let shells = 'ls';
  for (let i = 0; i < 9; i++) shells = `sh -c '${shells.replaceAll("'", "'\\''")}'`;
  const nestedShells = checkCommand({ allowlist: LIST, command: shells });
  assert.ok(!nestedShells.allowed && nestedShells.reason.includes('nests'));
});

test('NUL characters are refused', () => {
  assert.equal(checkCommand({ allowlist: LIST, command: 'ls \0 x' }).allowed, false);
  assert.equal(checkCommand({ allowlist: LIST, command: ['ls', 'a\0b'] }).allowed, false);
});

test('pathological input never throws', () => {
  const inputs = ['{ '.repeat(5000), '$(('.repeat(3000), '${x:-'.repeat(5000), '"'.repeat(9999), "'".repeat(9999), '\\'.repeat(9999), '(('.repeat(5000), '<<'.repeat(5000), 'a|'.repeat(20000)];
  for (const command of inputs) {
    const r = checkCommand({ allowlist: LIST, command });
    assert.equal(typeof r.allowed, 'boolean');
  }
});

test('checkEnvironment refuses protected variables in the exec env while a list is in force', () => {
  assert.deepEqual(checkEnvironment([], { PATH: '/tmp' }), { allowed: true });
  assert.deepEqual(checkEnvironment(LIST, { FOO: '1', HOME: '/w' }), { allowed: true });
  assert.deepEqual(checkEnvironment(LIST, undefined), { allowed: true });
  for (const name of ['PATH', 'LD_PRELOAD', 'BASH_ENV', 'ENV', 'BASH_FUNC_ls%%', 'PS4', 'GIT_SSH_COMMAND']) {
    const r = checkEnvironment(LIST, { [name]: 'x' });
    assert.ok(!r.allowed && r.variable === name, name);
  }
});
