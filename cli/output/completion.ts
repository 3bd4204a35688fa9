import type { Command } from 'commander';

/** One command of the tree, as completion needs it. */
interface Node {
  /** '' for the program, '/files', '/files/grep', … */
  path: string;
  commands: { name: string; description: string }[];
  options: { flags: string[]; long?: string; short?: string; description: string; takesValue: boolean }[];
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** Every command of the program, with its visible subcommands and options, as --help shows them. */
function nodesOf(program: Command): Node[] {
  const nodes: Node[] = [];
  const walk = (cmd: Command, path: string) => {
    const help = cmd.createHelp();
    const commands = help.visibleCommands(cmd).filter((c) => c.name() !== 'help');
    nodes.push({
      path,
      commands: [
        ...commands.map((c) => ({ name: c.name(), description: oneLine(c.summary() || c.description()) })),
        // An argument's fixed choices complete like subcommands (`completion bash`).
        ...cmd.registeredArguments.flatMap((a) => (a.argChoices ?? []).map((choice) => ({ name: choice, description: oneLine(a.description) }))),
      ],
      options: help.visibleOptions(cmd).map((o) => ({
        flags: [o.short, o.long].filter((f): f is string => Boolean(f)),
        long: o.long,
        short: o.short,
        description: oneLine(o.description),
        takesValue: o.required || o.optional,
      })),
    });
    for (const c of commands) walk(c, `${path}/${c.name()}`);
  };
  walk(program, '');
  return nodes;
}

function oneLine(text: string): string {
  return text.split('\n')[0]!.trim();
}

/** The shell's completion script for the program. */
export function completionScript(program: Command, shell: Shell): string {
  const nodes = nodesOf(program);
  const name = program.name();
  if (shell === 'bash') return bash(name, nodes);
  if (shell === 'zsh') return zsh(name, nodes);
  return fish(name, nodes);
}

/** Flags that take a value anywhere in the tree: the word after one is not a command. */
function valueFlags(nodes: Node[]): string[] {
  return [...new Set(nodes.flatMap((n) => n.options.filter((o) => o.takesValue).flatMap((o) => o.flags)))].sort();
}

function childPaths(nodes: Node[]): string[] {
  return nodes.map((n) => n.path).filter((p) => p !== '');
}

/** A word in single quotes for sh-like shells (bash, zsh). */
function sq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Bash and zsh: the same walk over the words typed so far, finding the command they name. */
function shWalk(first: string, words: string, last: string, nodes: Node[]): string {
  const values = valueFlags(nodes);
  return [
    `  local cmdpath= word i skip=0`,
    `  for ((i = ${first}; i < ${last}; i++)); do`,
    `    word=${words}`,
    `    if ((skip)); then skip=0; continue; fi`,
    `    [[ $word == -- ]] && return 0`,
    `    case $word in`,
    ...(values.length ? [`      ${values.join('|')}) skip=1; continue ;;`] : []),
    `      -*) continue ;;`,
    `    esac`,
    `    case "$cmdpath/$word" in`,
    `      ${childPaths(nodes).join('|')}) cmdpath="$cmdpath/$word" ;;`,
    `    esac`,
    `  done`,
  ].join('\n');
}

function bash(name: string, nodes: Node[]): string {
  const fn = `_${name.replace(/\W/g, '_')}`;
  const values = valueFlags(nodes);
  const cases = nodes.map((n) => {
    const words = [...n.commands.map((c) => c.name), ...n.options.flatMap((o) => o.flags)];
    return `    ${sq(n.path)}) words=${sq(words.join(' '))} ;;`;
  });
  return [
    `# ${name} completion for bash. Load it with:  eval "$(${name} completion bash)"`,
    `# or save it as ~/.local/share/bash-completion/completions/${name}`,
    `${fn}() {`,
    `  local cur=\${COMP_WORDS[COMP_CWORD]} words`,
    `  COMPREPLY=()`,
    ...(values.length
      ? [`  case \${COMP_WORDS[COMP_CWORD-1]} in`, `    ${values.join('|')}) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;`, `  esac`]
      : []),
    shWalk('1', '${COMP_WORDS[i]}', 'COMP_CWORD', nodes),
    `  case $cmdpath in`,
    ...cases,
    `    *) words= ;;`,
    `  esac`,
    `  COMPREPLY=($(compgen -W "$words" -- "$cur"))`,
    `}`,
    `complete -F ${fn} ${name}`,
    '',
  ].join('\n');
}

function zsh(name: string, nodes: Node[]): string {
  const fn = `_${name.replace(/\W/g, '_')}`;
  const values = valueFlags(nodes);
  const cases = nodes.map((n) => {
    const commands = n.commands.map((c) => sq(`${c.name.replace(/:/g, '\\:')}:${c.description}`));
    const options = n.options.flatMap((o) => o.flags.map((f) => sq(`${f}:${o.description}`)));
    return [`    ${sq(n.path)})`, `      commands=(${commands.join(' ')})`, `      options=(${options.join(' ')}) ;;`].join('\n');
  });
  return [
    `#compdef ${name}`,
    `# ${name} completion for zsh. Load it with:  eval "$(${name} completion zsh)"  (after compinit)`,
    `# or save it as _${name} in a folder on $fpath.`,
    `${fn}() {`,
    `  local -a commands options`,
    ...(values.length ? [`  case \${words[CURRENT-1]} in`, `    ${values.join('|')}) _files; return ;;`, `  esac`] : []),
    shWalk('2', '${words[i]}', 'CURRENT', nodes),
    `  case $cmdpath in`,
    ...cases,
    `  esac`,
    `  if [[ \${words[CURRENT]} == -* ]]; then`,
    `    _describe -t options 'option' options`,
    `  else`,
    `    _describe -t commands 'command' commands || _describe -t options 'option' options`,
    `  fi`,
    `}`,
    `if [[ "\${funcstack[1]}" == "${fn}" ]]; then`,
    `  ${fn} "$@"`,
    `else`,
    `  compdef ${fn} ${name}`,
    `fi`,
    '',
  ].join('\n');
}

/** A word in single quotes for fish. */
function fq(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function fish(name: string, nodes: Node[]): string {
  const fn = `__${name.replace(/\W/g, '_')}`;
  const values = valueFlags(nodes);
  const lines = [
    `# ${name} completion for fish. Save it with:  ${name} completion fish > ~/.config/fish/completions/${name}.fish`,
    `function ${fn}_path --description 'the ${name} command named by the words typed so far'`,
    `    set -l cmdpath ''`,
    `    set -l skip 0`,
    `    for word in (commandline -opc)[2..-1]`,
    `        if test $skip = 1`,
    `            set skip 0`,
    `            continue`,
    `        end`,
    `        switch $word`,
    `            case --`,
    `                printf '%s\\n' stop`,
    `                return`,
    ...(values.length ? [`            case ${values.map(fq).join(' ')}`, `                set skip 1`, `                continue`] : []),
    `            case '-*'`,
    `                continue`,
    `        end`,
    `        if contains -- "$cmdpath/$word" ${childPaths(nodes).map(fq).join(' ')}`,
    `            set cmdpath "$cmdpath/$word"`,
    `        end`,
    `    end`,
    `    printf '%s\\n' "root$cmdpath"`,
    `end`,
    `function ${fn}_at --description 'whether the words typed so far name this ${name} command'`,
    `    test (${fn}_path) = "root$argv[1]"`,
    `end`,
    `complete -c ${name} -f`,
  ];
  for (const n of nodes) {
    const at = `-n ${fq(`${fn}_at ${fq(n.path)}`)}`;
    for (const c of n.commands) lines.push(`complete -c ${name} ${at} -a ${fq(c.name)} -d ${fq(c.description)}`);
    for (const o of n.options) {
      const parts = [`complete -c ${name} ${at}`];
      if (o.long) parts.push(`-l ${fq(o.long.replace(/^--/, ''))}`);
      if (o.short) parts.push(`-s ${fq(o.short.replace(/^-/, ''))}`);
      if (o.takesValue) parts.push('-r -F');
      parts.push(`-d ${fq(o.description)}`);
      lines.push(parts.join(' '));
    }
  }
  lines.push('');
  return lines.join('\n');
}
