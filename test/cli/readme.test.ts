import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ok, repoRoot, runCli, tempHome } from './cli-helpers.ts';

// The READMEs are where people copy commands from: every `paddock …` line of their shell blocks
// must name a command the installed CLI has, with flags it takes and the arguments it needs.

const READMES = ['README.md', 'cli/README.md'];

/** Words as a POSIX shell splits them, for the simple quoting a README uses. */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|"((?:\\.|[^"\\])*)"|(\S+)/g)) out.push(m[1] ?? m[2] ?? m[3]!);
  return out;
}

/** Each `paddock …` invocation in the READMEs' sh blocks: its words up to a `--` (the remote command's). */
function invocations(): { where: string; argv: string[] }[] {
  const found: { where: string; argv: string[] }[] = [];
  for (const file of READMES) {
    const text = readFileSync(join(repoRoot, file), 'utf8');
    for (const block of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
      for (const raw of block[1]!.split('\n')) {
        // Comments go, and the brackets of an optional part: it is checked as if given.
        const line = raw.replace(/\s+#.*$/, '').replace(/[[\]]/g, '').trim();
        for (const part of line.split(/&&|\|/).map((p) => p.trim())) {
          const argv = words(part);
          if (argv[0] !== 'paddock') continue;
          const dashes = argv.indexOf('--');
          found.push({ where: `${file}: ${part}`, argv: argv.slice(1, dashes === -1 ? undefined : dashes) });
        }
      }
    }
  }
  return found;
}

interface Help {
  path: string[];
  takesSubcommand: boolean;
  /** Arguments of its own besides a subcommand (`preview [port]` next to `preview ls`). */
  ownArguments: number;
  required: number;
  /** Each flag it takes, and whether a value follows it. */
  flags: Map<string, boolean>;
}

function parseHelp(text: string): Help {
  const usage = /^Usage: paddock((?: [a-z][a-z-]*)*)(.*)$/m.exec(text);
  assert.ok(usage, text);
  const flags = new Map<string, boolean>([['--help', false], ['-h', false]]);
  for (const m of text.matchAll(/^\s+(?:(-\w), )?(--[\w-]+)((?: <[^>]+>| \[[^\]]+\]))?/gm)) {
    const takesValue = m[3] !== undefined;
    flags.set(m[2]!, takesValue);
    if (m[1]) flags.set(m[1], takesValue);
    // A boolean flag --x has its --no-x, and --no-x its --x.
    if (m[2]!.startsWith('--no-')) flags.set(`--${m[2]!.slice(5)}`, false);
  }
  return {
    path: usage[1]!.trim().split(' ').filter(Boolean),
    takesSubcommand: /\[command\]|<command>/.test(usage[2]!),
    ownArguments: (usage[2]!.match(/<(?!command>)[^>]+>|\[(?!command\]|options\])[^\]]+\]/g) ?? []).length,
    required: (usage[2]!.match(/<(?!command>)[^>]+>/g) ?? []).length,
    flags,
  };
}

test('every paddock command in the READMEs is one the installed CLI has, with its flags and arguments', async () => {
  const home = tempHome();
  const seen = invocations();
  assert.ok(seen.length >= 20, `only ${seen.length} paddock lines found`);
  const helps = new Map<string, Help>();
  for (const { where, argv } of seen) {
    const words = argv.filter((w) => !w.startsWith('-'));
    // The command's own help names its path: the longest run of leading words that is a command.
    const key = words.slice(0, 3).join(' ');
    let help = helps.get(key);
    if (!help) {
      help = parseHelp(ok(await runCli(home, [...words.slice(0, 3).filter((w) => /^[a-z][a-z-]*$/.test(w)), '--help'])));
      helps.set(key, help);
    }
    assert.deepEqual(argv.filter((w) => !w.startsWith('-')).slice(0, help.path.length), help.path, where);
    const rest = argv.slice(argv.indexOf(help.path.at(-1)!) + 1);
    if (help.path.length === 0) rest.splice(0, rest.length, ...argv);
    let positional = 0;
    for (let i = 0; i < rest.length; i++) {
      const word = rest[i]!;
      if (!word.startsWith('-')) {
        positional++;
        continue;
      }
      const flag = word.split('=')[0]!;
      assert.ok(help.flags.has(flag), `${where}: ${flag} is not a flag of paddock ${help.path.join(' ')}`);
      if (help.flags.get(flag) && !word.includes('=')) i++;
    }
    assert.ok(!(help.takesSubcommand && help.ownArguments === 0 && positional > 0), `${where}: paddock ${help.path.join(' ')} has no subcommand ${rest.find((w) => !w.startsWith('-'))}`);
    assert.ok(positional >= help.required, `${where}: paddock ${help.path.join(' ')} needs ${help.required} argument(s)`);
  }
});
