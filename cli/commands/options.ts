import { InvalidArgumentError, type Command } from 'commander';
import { fieldFlags } from '../output/fields.ts';
import { PASSWORD_RULE } from '../services/credentials.ts';

/** Collects repeated KEY=VALUE flags into a record. */
export function keyValue(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`"${value}" is not KEY=VALUE.`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
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
