import { posix } from 'node:path';
import { ApiError } from '../../../shared/errors.ts';
import { checkCommand, programPathProblem } from '../../../shared/allowlist/index.ts';
import { policedEnvironment } from '../exec/prepare.ts';
import type { MaskSet } from '../../../shared/exec/masker.ts';
import type { Brokering } from '../../../shared/secrets/brokering.ts';
import type { ExecContext } from '../sandboxes.ts';
import { requireRunning } from '../../../shared/sandboxes/running.ts';

export interface PreparedTerminal {
  /** Whose output it is: the account's output budget pays for it (exec/output-budget.ts). */
  accountId: string;
  argv: string[];
  env: Record<string, string>;
  /** The secrets to mask in the output, built; undefined for none. */
  masks: MaskSet | undefined;
  /** What the sandbox's egress sets for the terminal's programs (brokered secrets). */
  brokering: Brokering;
}

// Shells a terminal may run interactively: the program is what the allowlist decides on, since an
// interactive shell runs whatever is typed into it (docs/api.md, "Terminal").
const SHELLS = new Set(['sh', 'bash', 'dash', 'ash', 'ksh', 'mksh', 'zsh', 'fish', 'posh', 'yash']);

// The default command, the sandbox's login shell: bash when the image has it, else sh, each only
// when allowed. $1 and $2 say which the allowlist allows; the choice is made inside the sandbox,
// which alone knows what it has.
const LOGIN_SHELL = [
  'if [ -n "$1" ] && command -v bash >/dev/null 2>&1; then exec bash -l; fi',
  'if [ -n "$2" ]; then exec sh -l; fi',
  'echo "paddock: bash is not installed here, and the allowlist does not allow sh" >&2; exit 127',
].join('\n');

/**
 * Everything decided before a terminal opens: the sandbox must be running, the allowlist must
 * allow its program (nothing runs otherwise), and the environment is exec's: the sandbox's own,
 * then the account's secrets, then the sandbox's.
 */
export function prepareTerminal({ sandbox, allowlist: policy, openSecrets, rereadSecrets }: ExecContext, command: string[] | undefined): PreparedTerminal {
  requireRunning(sandbox, 'terminal');
  const allowlist = policy.commands;
  const argv = command ?? loginShell(allowlist);
  if (allowlist.length > 0 && command) refuseUnlisted(allowlist, command);
  const secrets = openSecrets();
  const env = policedEnvironment(allowlist, { TERM: 'xterm-256color', ...sandbox.env, ...secrets.env });
  return { accountId: sandbox.accountId, argv, env, masks: secrets.masks, brokering: { version: secrets.version, credentials: secrets.brokered, reread: rereadSecrets } };
}

function loginShell(allowlist: readonly string[]): string[] {
  const allows = (name: string) => allowlist.length === 0 || allowlist.includes(name);
  if (!allows('bash') && !allows('sh')) {
    throw new ApiError('command_not_allowed', 'The terminal runs the login shell, bash or sh, and neither is on the allowlist; name an allowed program with command.', {
      extra: { program: 'sh' },
    });
  }
  return ['/bin/sh', '-c', LOGIN_SHELL, 'paddock-login', allows('bash') ? 'bash' : '', allows('sh') ? 'sh' : ''];
}

/** A shell run interactively is allowed by its name alone; anything else passes exec's checker. */
function refuseUnlisted(allowlist: string[], argv: string[]): void {
  const program = posix.basename(argv[0] ?? '');
  if (SHELLS.has(program) && !argv.slice(1).some((a) => /^-[a-zA-Z]*c/.test(a))) {
    const outside = programPathProblem(argv[0] ?? '');
    if (outside !== undefined) throw new ApiError('command_not_allowed', outside, { extra: { program: argv[0] } });
    if (allowlist.includes(program)) return;
    throw new ApiError('command_not_allowed', `The program ${program} is not on the allowlist.`, { extra: { program } });
  }
  const verdict = checkCommand({ allowlist, command: argv });
  if (!verdict.allowed) throw new ApiError('command_not_allowed', verdict.reason, { extra: { program: verdict.program } });
}
