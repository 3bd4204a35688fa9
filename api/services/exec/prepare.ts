import type { z } from 'zod';
import { ApiError } from '../../../shared/errors.ts';
import type { ExecBody } from '../../routes/exec/schema.ts';
import { checkCommand, checkEnvironment, PROGRAM_PATH } from '../../../shared/allowlist/index.ts';
import type { MaskSet } from '../../../shared/exec/masker.ts';
import type { Brokering } from '../../../shared/secrets/brokering.ts';
import type { Config } from '../../../shared/config.ts';
import type { ExecContext } from '../sandboxes.ts';
import { requireRunning } from '../../../shared/sandboxes/running.ts';

/** What a command is run with: the exec request, as its schema has it (background is the route's). */
export type ExecInput = Omit<z.infer<typeof ExecBody>, 'background'>;

export interface PreparedExec {
  /** Whose output it is: the account's output budget pays for it (output-budget.ts). */
  accountId: string;
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  stdin?: Uint8Array;
  timeoutMs: number;
  /** The secrets to mask in the output, built; undefined for none. */
  masks: MaskSet | undefined;
  /** What the sandbox's egress sets for the command (brokered secrets). */
  brokering: Brokering;
}

/**
 * Everything decided before a command runs: the sandbox must be running, the allowlist must
 * allow it (nothing runs otherwise), and the environment is the sandbox's own, then the account's
 * secrets, then the sandbox's secrets, then the request's env. The sandbox and its policy come
 * read together, in one round trip (findOwnSandboxWithPolicy).
 */
/** What preparing a command obeys: the exec timeouts' settings. */
export interface ExecSettings {
  config: Pick<Config, 'PADDOCK_EXEC_TIMEOUT_MAX_SECONDS' | 'PADDOCK_EXEC_TIMEOUT_DEFAULT_SECONDS'>;
}

export function prepareExec(deps: ExecSettings, { sandbox, allowlist, openSecrets, rereadSecrets }: ExecContext, input: ExecInput): PreparedExec {
  requireRunning(sandbox, 'exec');
  const max = deps.config.PADDOCK_EXEC_TIMEOUT_MAX_SECONDS;
  // A default configured above the maximum is held to it: a request that sends no timeout is never refused for one.
  const timeoutSeconds = input.timeoutSeconds ?? Math.min(deps.config.PADDOCK_EXEC_TIMEOUT_DEFAULT_SECONDS, max);
  if (timeoutSeconds > max) {
    throw new ApiError('invalid_request', `body.timeoutSeconds: at most ${max} seconds`, {
      extra: { errors: [{ location: 'body', field: 'timeoutSeconds', message: `at most ${max}` }] },
    });
  }

  if (allowlist.commands.length > 0) {
    const verdict = checkCommand({ allowlist: allowlist.commands, command: input.command });
    if (!verdict.allowed) {
      throw new ApiError('command_not_allowed', verdict.reason, { extra: { program: verdict.program } });
    }
  }

  // Opened only for a command the allowlist lets run.
  const secrets = openSecrets();
  const env = policedEnvironment(allowlist.commands, { ...sandbox.env, ...secrets.env, ...input.env });
  const argv = typeof input.command === 'string' ? ['/bin/sh', '-c', input.command] : input.command;
  refuseOversized(argv, env);
  return {
    accountId: sandbox.accountId,
    argv,
    cwd: input.cwd ?? '/workspace',
    env,
    stdin: input.stdin !== undefined ? Buffer.from(input.stdin, 'utf8') : undefined,
    timeoutMs: Math.round(timeoutSeconds * 1000),
    masks: secrets.masks,
    brokering: { version: secrets.version, credentials: secrets.brokered, reread: rereadSecrets },
  };
}

/**
 * The whole environment a command (or terminal) starts with, checked against the allowlist, not
 * only the request's part: the sandbox's create-time env and the secrets' names reach it too, and
 * an allowlist may be newer than both. Under an allowlist, PATH is the system's program
 * directories, whatever the image's: the names the checker allowed resolve there.
 */
export function policedEnvironment(allowlist: readonly string[], env: Record<string, string>): Record<string, string> {
  const verdict = checkEnvironment(allowlist, env);
  if (!verdict.allowed) throw new ApiError('command_not_allowed', verdict.reason, { extra: { variable: verdict.variable } });
  return allowlist.length > 0 ? { ...env, PATH: PROGRAM_PATH } : env;
}

// What execve accepts: one string of at most 32 pages (MAX_ARG_STRLEN, with its NUL), and all of
// them together within ARG_MAX, a quarter of the default 8 MiB stack. Kept well inside it, so a
// command never fails with E2BIG after everything was decided.
const ARG_STRING_MAX_BYTES = 128 * 1024 - 1;
const ARGS_TOTAL_MAX_BYTES = 1024 * 1024;

function refuseOversized(argv: string[], env: Record<string, string>): void {
  let total = 0;
  const fail = (field: string, message: string): never => {
    throw new ApiError('invalid_request', `body.${field}: ${message}`, { extra: { errors: [{ location: 'body', field, message }] } });
  };
  for (const arg of argv) {
    const bytes = Buffer.byteLength(arg);
    if (bytes > ARG_STRING_MAX_BYTES) fail('command', `each argument must be under ${ARG_STRING_MAX_BYTES + 1} bytes`);
    total += bytes + 1;
  }
  for (const [name, value] of Object.entries(env)) {
    const bytes = Buffer.byteLength(name) + 1 + Buffer.byteLength(value);
    if (bytes > ARG_STRING_MAX_BYTES) fail('env', `${name}: a variable (with its secrets and the sandbox's env) must be under ${ARG_STRING_MAX_BYTES + 1} bytes`);
    total += bytes + 1;
  }
  if (total > ARGS_TOTAL_MAX_BYTES) {
    fail('env', `the command and its environment (with the account's secrets and the sandbox's env) must be at most ${ARGS_TOTAL_MAX_BYTES} bytes together; they are ${total}`);
  }
}
