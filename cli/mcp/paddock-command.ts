import { accessSync, constants, statSync } from 'node:fs';
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
