import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { posix, win32 } from 'node:path';
import { DEFAULT_COMMAND } from '../../shared/mcp/targets.ts';

export interface CommandContext {
  platform: string;
  env: Record<string, string | undefined>;
  /** process.argv[1]: the script the running paddock was started as. */
  argv1?: string;
  /** Whether `path` is an executable file; injectable for tests. */
  isExecutable?: (path: string) => boolean;
}

function defaultIsExecutable(platform: string) {
  return (path: string): boolean => {
    try {
      if (!statSync(path).isFile()) return false;
      if (platform !== 'win32') accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
}

/**
 * The command a client should run for `paddock mcp serve`: the absolute path of the paddock
 * executable when it can be found (GUI clients such as Claude Desktop do not see the shell's PATH),
 * else plain `paddock`.
 *
 * In order: the running paddock itself, when it was started through an executable named paddock;
 * then the first paddock on PATH (with PATHEXT on Windows).
 */
export function resolvePaddockCommand(ctx: CommandContext): string {
  const windows = ctx.platform === 'win32';
  const path = windows ? win32 : posix;
  const isExecutable = ctx.isExecutable ?? defaultIsExecutable(ctx.platform);
  // paddock, paddock.cmd/.exe on Windows; cli/bin/paddock.js (a script with a shebang) elsewhere.
  const isPaddock = (file: string) => (windows ? /^paddock\.(cmd|exe|bat)$/i : /^paddock(\.js)?$/).test(path.basename(file));

  if (ctx.argv1 && path.isAbsolute(ctx.argv1) && isPaddock(ctx.argv1) && isExecutable(ctx.argv1)) return ctx.argv1;

  const pathVar = ctx.env.PATH ?? ctx.env.Path ?? '';
  const extensions = windows ? (ctx.env.PATHEXT ?? '.COM;.EXE;.BAT;.CMD').split(';').filter(Boolean) : [''];
  for (const dir of pathVar.split(windows ? ';' : ':')) {
    if (!dir || !path.isAbsolute(dir)) continue;
    for (const ext of extensions) {
      const candidate = path.join(dir, `${DEFAULT_COMMAND}${ext.toLowerCase()}`);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return DEFAULT_COMMAND;
}

/**
 * The entry's command when this CLI can name itself: the Node running it now and its own script,
 * both absolute, so the app starts it with a Node known to run it, whatever `node` comes first on
 * the app's PATH (a GUI app's PATH, or an old Node a version manager put first). Undefined when
 * the running script is not the CLI's (then resolvePaddockCommand's answer is used).
 */
export function selfCommand(argv1: string | undefined, execPath: string): { command: string; launcher: string[] } | undefined {
  if (!argv1) return undefined;
  let script: string;
  try {
    script = realpathSync(argv1);
  } catch {
    return undefined;
  }
  // The installed package's bin, its bundle, or the sources' entry.
  if (!/[\\/](bin[\\/]paddock\.cjs|dist[\\/]paddock\.js|cli[\\/]main\.ts)$/.test(script)) return undefined;
  return { command: execPath, launcher: [script] };
}
