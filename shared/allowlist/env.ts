/**
 * Variables that decide which code runs: the search path, the dynamic loader's preloads, the
 * shell's startup files and trace prompt, exported bash functions, and the pager/editor/ssh
 * commands that common programs start. With an allowlist in force, a command may not set them
 * (prefix assignments, plain assignments, export/readonly/local, read, for, getopts, printf -v,
 * `${VAR:=…}`, env/sudo/strace -E), and the exec route should refuse them in its `env` object.
 */
const PROTECTED_NAMES = new Set([
  'PATH',
  'IFS',
  'SHELL',
  'ENV',
  'BASH_ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PS4',
  'PROMPT_COMMAND',
  'FPATH',
  'GCONV_PATH',
  'GLIBC_TUNABLES',
  'LOCPATH',
  'PAGER',
  'MANPAGER',
  'EDITOR',
  'VISUAL',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
  'LESSOPEN',
  'LESSCLOSE',
  'TAR_OPTIONS',
  'GIT_PAGER',
  'GIT_EDITOR',
  'GIT_SEQUENCE_EDITOR',
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_EXTERNAL_DIFF',
  'GIT_ASKPASS',
  'GIT_PROXY_COMMAND',
  'GIT_EXEC_PATH',
]);
const PROTECTED_PREFIXES = ['LD_', 'BASH_FUNC_', 'GIT_CONFIG'];

export function isProtectedVariable(name: string): boolean {
  return PROTECTED_NAMES.has(name) || PROTECTED_PREFIXES.some((p) => name.startsWith(p));
}

export function protectedVariableReason(name: string): string {
  return `setting \`${name}\` is not allowed while a command allowlist is in force: it can change which program or code runs`;
}

/**
 * For the exec route: the request's `env` object may not set protected variables while an
 * allowlist is in force. Empty allowlist → always allowed.
 */
export function checkEnvironment(
  allowlist: readonly string[],
  env: Readonly<Record<string, string>> | undefined,
): { allowed: true } | { allowed: false; variable: string; reason: string } {
  if (allowlist.length === 0 || env === undefined) return { allowed: true };
  for (const name of Object.keys(env)) {
    if (isProtectedVariable(name)) return { allowed: false, variable: name, reason: protectedVariableReason(name) };
  }
  return { allowed: true };
}
