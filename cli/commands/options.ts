import { InvalidArgumentError, type Command } from 'commander';
import { fieldFlags } from '../output/fields.ts';
import { PASSWORD_RULE } from '../services/credentials.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';

/** Collects repeated KEY=VALUE flags into a record. */
export function keyValue(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`"${value}" is not KEY=VALUE.`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

/** Collects a repeated flag's values, in order. */
export function repeated(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number.');
  return n;
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a whole number, 1 or more.');
  return n;
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/** Seconds, given as a whole number of them or as a duration: 90s, 5m, 1h. */
export function durationSeconds(value: string): number {
  const match = /^(\d+)([smh]?)$/.exec(value.trim());
  const seconds = match ? Number(match[1]) * UNIT_SECONDS[match[2] || 's']! : NaN;
  if (!Number.isSafeInteger(seconds) || seconds <= 0) throw new InvalidArgumentError('must be seconds (1 or more) or a duration such as 90s, 5m or 1h.');
  return seconds;
}

export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0 || value.trim() === '') throw new InvalidArgumentError('must be a whole number, 0 or more.');
  return n;
}

export function jsonOption(cmd: Command): Command {
  return cmd.option('--json', 'print the result as JSON, for scripts');
}

export function sessionOption(cmd: Command): Command {
  return cmd.option('-s, --session <session_id>', 'the session to use (default: the one active session, when there is exactly one)');
}

/** --email, --password, --password-stdin; `newPassword` (signup) states the service's rule for one. */
export function credentialOptions(cmd: Command, options: { newPassword?: boolean } = {}): Command {
  const rule = options.newPassword ? ` (${PASSWORD_RULE})` : '';
  return fieldFlags(
    cmd
      .option('--email <email>', 'the account email (asked for when not given)')
      .option('--password <password>', `the password${rule}; visible in shell history: prefer the prompt or --password-stdin`)
      .option('--password-stdin', `read the password${rule} from standard input`),
    { 'body.email': '--email', 'body.password': '--password' },
  );
}

/** The session named as the argument or as --session (both: only when they agree). */
export function sameOrOne(positional: string | undefined, flag: string | undefined): string | undefined {
  if (positional && flag && positional !== flag) throw new CliError('Give the session once: as the argument or as --session.', { exitCode: EXIT_USAGE });
  return positional ?? flag;
}
