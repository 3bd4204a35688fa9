/**
 * An error the CLI reports as it is: a message, an optional hint on what to do, and the exit
 * code. Anything else that reaches the top is described by output/error.ts.
 */
export class CliError extends Error {
  override name = 'CliError';
  readonly hint: string | undefined;
  readonly exitCode: number;
  readonly code: string | undefined;

  constructor(message: string, options: { hint?: string; exitCode?: number; code?: string } = {}) {
    super(message);
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? 1;
    this.code = options.code;
  }
}

/** Exit codes: 0 success, 1 an error, 2 wrong usage; exec exits with the command's own code. */
export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;
/** exec: the command could not be run at all (docker's convention). */
export const EXIT_EXEC_FAILED = 125;
/** exec: the command timed out (timeout(1)'s convention). */
export const EXIT_TIMED_OUT = 124;
/** files grep, as grep(1): nothing matched (1), the search itself failed (2). */
export const EXIT_NO_MATCH = 1;
export const EXIT_GREP_TROUBLE = 2;
/** Interrupted by Ctrl-C. */
export const EXIT_INTERRUPTED = 130;
/** The reader of our output went away (`paddock … | head`): what a tool SIGPIPE ends exits with. */
export const EXIT_BROKEN_PIPE = 141;

const EXIT_CODE = Symbol('paddock.exitCode');

/** Marks any error with the exit code the CLI should exit with when it reaches the top. */
export function withExitCode<E>(err: E, code: number): E {
  if (err && typeof err === 'object') (err as Record<symbol, unknown>)[EXIT_CODE] = code;
  return err;
}

export function exitCodeOverride(err: unknown): number | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const code = (err as Record<symbol, unknown>)[EXIT_CODE];
  return typeof code === 'number' ? code : undefined;
}
