import { posix } from 'node:path';
import { MAX_NAME_BYTES, MAX_PATH_BYTES } from './limits.ts';

// Paths as the sandbox sees them. Every file operation runs *inside* the sandbox (see scripts.ts):
// as the sandbox's unprivileged user, in its own mount namespace, so `/` is the sandbox's root and
// every path, `..` and symlink included, is resolved by the sandbox's kernel view and nothing else.
// There is no host path anywhere on this side to escape to. Normalising here is only hygiene (a
// clear `path` in answers, no NUL bytes, no absurd lengths), not the confinement.

/** The sandbox's working directory: relative paths are relative to it. */
export const WORKSPACE = '/workspace';

/** Why a path is refused, or undefined when it is acceptable. */
export function pathProblem(path: string): string | undefined {
  if (path.length === 0) return 'must not be empty';
  if (path.includes('\0')) return 'must not contain NUL bytes';
  if (Buffer.byteLength(path, 'utf8') > MAX_PATH_BYTES) return `must be at most ${MAX_PATH_BYTES} bytes`;
  if (!path.isWellFormed()) return 'must be well-formed Unicode';
  if (path.split('/').some((name) => Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES)) {
    return `each name in it must be at most ${MAX_NAME_BYTES} bytes`;
  }
  return undefined;
}

/** The absolute, normalised form: `..` and `.` resolved lexically, no trailing slash. */
export function normalisePath(path: string, base = WORKSPACE): string {
  return posix.resolve(base, path);
}

/** `child` relative to `dir` (both normalised, child under dir); '' when they are equal. */
export function relativeTo(dir: string, child: string): string {
  if (child === dir) return '';
  return dir === '/' ? child.slice(1) : child.slice(dir.length + 1);
}
