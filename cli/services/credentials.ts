import { CliError, EXIT_USAGE } from '../errors.ts';
import { say } from '../output/print.ts';
import { askNonEmpty, canPrompt } from '../terminal/prompt.ts';
import { readStdinValue } from '../terminal/stdin.ts';

/** The service's rule for a new password (signup), checked here before anything is sent. */
export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 1024;
export const PASSWORD_RULE = `at least ${PASSWORD_MIN_LENGTH} characters`;

/** What is wrong with a new password, or undefined. */
export function passwordProblem(password: string): string | undefined {
  if (password.length < PASSWORD_MIN_LENGTH) return `The password must be ${PASSWORD_RULE} (it has ${password.length}).`;
  if (password.length > PASSWORD_MAX_LENGTH) return `The password must be at most ${PASSWORD_MAX_LENGTH} characters.`;
  return undefined;
}

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
 * The password from --password, --password-stdin or a hidden prompt. A new password (`confirm`,
 * at signup) is held to the service's rule as soon as it is typed, before it is asked again.
 * Asked for after the email, so a run without a terminal names the first missing input.
 */
export async function passwordFrom(flags: CredentialFlags, options: { confirm?: boolean } = {}): Promise<string> {
  if (flags.password !== undefined && flags.passwordStdin) {
    throw new CliError('Give the password one way: --password or --password-stdin, not both.', { exitCode: EXIT_USAGE });
  }
  const checked = (password: string, flag: string): string => {
    const problem = options.confirm ? passwordProblem(password) : undefined;
    if (problem) throw new CliError(problem, { hint: `Give a longer password in ${flag}.`, exitCode: EXIT_USAGE, code: 'invalid_password' });
    return password;
  };
  if (flags.password !== undefined) return checked(flags.password, '--password');
  if (flags.passwordStdin) {
    const value = await readStdinValue();
    if (!value) throw new CliError('--password-stdin was given, and standard input was empty.', { exitCode: EXIT_USAGE });
    return checked(value, '--password-stdin');
  }
  const ask = { what: 'The password', instead: '--password-stdin (and pipe the password in)', hidden: true };
  if (!options.confirm) return askNonEmpty('Password: ', ask);
  for (;;) {
    const password = await askNonEmpty(`Password (${PASSWORD_RULE}): `, ask);
    const problem = passwordProblem(password);
    if (problem) {
      say(problem);
      continue;
    }
    if (!canPrompt()) return password;
    const again = await askNonEmpty('Repeat the password: ', ask);
    if (again !== password) throw new CliError('The two passwords differ.', { exitCode: EXIT_USAGE });
    return password;
  }
}
