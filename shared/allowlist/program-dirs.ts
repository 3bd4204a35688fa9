import { posix } from 'node:path';

// With an allowlist in force, a program runs from the system's program directories only. They are
// read-only to the sandbox (the image's, or the host's userland), so a name on the list means the
// program the system installed under that name, never a file the sandbox wrote and marked
// executable under it: otherwise a key with `files:write` and `exec` could run anything, and so
// lift an allowlist it has no scope to change.

export const PROGRAM_DIRS: readonly string[] = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** The PATH every command starts with while an allowlist is in force: its bare names resolve there. */
export const PROGRAM_PATH = PROGRAM_DIRS.join(':');

/** Why a program word cannot be run under an allowlist; undefined for a bare name or a path into PROGRAM_DIRS. */
export function programPathProblem(value: string): string | undefined {
  if (!value.includes('/')) return undefined;
  const where = `with an allowlist, a program runs by its name or from ${PROGRAM_DIRS.join(', ')}, not from a path the sandbox can write`;
  if (!value.startsWith('/')) return `\`${value}\` is a relative path: ${where}`;
  if (PROGRAM_DIRS.includes(posix.dirname(posix.normalize(value)))) return undefined;
  return `\`${value}\` is outside the system's program directories: ${where}`;
}
