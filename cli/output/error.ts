import { CommanderError } from 'commander';
import { InsecureBaseUrlError, MalformedCredentialError, PaddockApiError, PaddockConnectionError, PaddockError } from '../api/index.ts';
import { CliError, EXIT_ERROR, EXIT_USAGE, exitCodeOverride } from '../errors.ts';
import { inFlagTerms, type ErrorContext } from './fields.ts';
import { hintFor } from './hints.ts';

export interface DescribedError {
  message: string;
  code?: string;
  status?: number;
  requestId?: string;
  hint?: string;
  exitCode: number;
}

/**
 * Turns anything thrown into what the person (or script) is told; with the command that ran,
 * the API's field names in its message become that command's flags.
 */
export function describeError(err: unknown, context?: ErrorContext): DescribedError {
  const described = describe(err, context);
  const override = exitCodeOverride(err);
  return override === undefined ? described : { ...described, exitCode: override };
}

function describe(err: unknown, context: ErrorContext | undefined): DescribedError {
  if (err instanceof CliError) return { message: err.message, code: err.code, hint: err.hint, exitCode: err.exitCode };
  if (err instanceof PaddockApiError) {
    let hint = hintFor(err.code, err.retryAfter);
    if (context && hint) hint = hint.replace('`--help`', `\`${context.command} --help\``);
    return {
      message: context ? inFlagTerms(err.detail, context.fields) : err.detail,
      code: err.code,
      status: err.status,
      requestId: err.requestId,
      hint,
      exitCode: EXIT_ERROR,
    };
  }
  if (err instanceof InsecureBaseUrlError) {
    return {
      message: err.message,
      code: 'insecure_base_url',
      hint: "Use the service's https:// address (in --url, `paddock config set-url` or PADDOCK_BASE_URL).",
      exitCode: EXIT_ERROR,
    };
  }
  if (err instanceof MalformedCredentialError) {
    return { message: err.message, code: 'malformed_api_key', hint: 'Check PADDOCK_API_KEY and `paddock config show`.', exitCode: EXIT_USAGE };
  }
  if (err instanceof PaddockConnectionError) {
    return {
      message: err.message,
      code: 'connection_failed',
      hint: 'Check the base URL (`paddock config show`) and your network.',
      exitCode: EXIT_ERROR,
    };
  }
  if (err instanceof PaddockError) return { message: err.message, exitCode: EXIT_ERROR };
  if (err instanceof CommanderError) return { message: err.message, exitCode: err.exitCode };
  const message = err instanceof Error ? err.message : String(err);
  return { message: `Unexpected error: ${message}`, code: 'internal_cli_error', exitCode: EXIT_ERROR };
}

/** Writes the error on stderr: as JSON when --json was asked for, else as text. */
export function printError(err: unknown, json: boolean, stderr: NodeJS.WritableStream = process.stderr, context?: ErrorContext): number {
  const d = describeError(err, context);
  if (json) {
    const { exitCode: _, ...rest } = d;
    stderr.write(`${JSON.stringify({ error: rest })}\n`);
    return d.exitCode;
  }
  // The code goes on the first line, after the message's own first line.
  const [first, ...rest] = d.message.split('\n');
  let text = `Error: ${first}${d.code ? ` [${d.code}]` : ''}\n`;
  for (const line of rest) text += `${line}\n`;
  if (d.hint) text += `Hint: ${d.hint}\n`;
  if (d.requestId && (d.status ?? 0) >= 500) text += `Request id: ${d.requestId}\n`;
  stderr.write(text);
  return d.exitCode;
}
