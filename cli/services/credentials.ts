import { CliError, EXIT_USAGE } from '../errors.ts';
import { askNonEmpty, canPrompt } from '../terminal/prompt.ts';
import { readStdinValue } from '../terminal/stdin.ts';

export interface CredentialFlags {
  email?: string;
  password?: string;
  passwordStdin?: boolean;
}

/** The email from --email, else asked for. */
export async function emailFrom(flags: CredentialFlags): Promise<string> {
  if (flags.email !== undefined) return flags.email.trim();
  return askNonEmpty('Email: ', { what: 'The account email', instead: '--email <email>' });
}

/**
 * The password from --password, --password-stdin or a hidden prompt (asked twice when `confirm`).
 * Asked for after the email, so a run without a terminal names the first missing input.
 */
export async function passwordFrom(flags: CredentialFlags, options: { confirm?: boolean } = {}): Promise<string> {
  if (flags.password !== undefined && flags.passwordStdin) {
    throw new CliError('Give the password one way: --password or --password-stdin, not both.', { exitCode: EXIT_USAGE });
  }
  if (flags.password !== undefined) return flags.password;
  if (flags.passwordStdin) {
    const value = await readStdinValue();
    if (!value) throw new CliError('--password-stdin was given, and standard input was empty.', { exitCode: EXIT_USAGE });
    return value;
  }
  const ask = { what: 'The password', instead: '--password-stdin (and pipe the password in)', hidden: true };
  const password = await askNonEmpty('Password: ', ask);
  if (options.confirm && canPrompt()) {
    const again = await askNonEmpty('Repeat the password: ', ask);
    if (again !== password) throw new CliError('The two passwords differ.', { exitCode: EXIT_USAGE });
  }
  return password;
}
