import { ApiError } from '../../../shared/errors.ts';

// The reasons the scripts report (`PADDOCK_ERR:<reason>` on stderr) and the answers they become.
// Two have no code of their own yet and answer invalid_request with a clear detail: a permission
// the sandbox user lacks (a read-only /usr, another user's file) and a path that is not a
// regular file (a FIFO or a device, which would block or never end).

const MARKER = /PADDOCK_ERR:([a-z_]+)/;

export type ScriptFailure =
  | 'file_not_found'
  | 'is_a_directory'
  | 'not_a_directory'
  | 'file_exists'
  | 'permission_denied'
  | 'not_a_regular_file'
  | 'disk_full'
  | 'io_error'
  | 'directory_not_empty'
  | 'into_itself';

export const MARKER_EXIT_REASONS: ReadonlySet<string> = new Set<ScriptFailure>([
  'file_not_found',
  'is_a_directory',
  'not_a_directory',
  'file_exists',
  'permission_denied',
  'not_a_regular_file',
  'disk_full',
  'io_error',
  'directory_not_empty',
  'into_itself',
]);

/**
 * What the tools say (LC_ALL=C) when the disk, or the user's quota of it, has no room left:
 * the kernel's words, and GNU tar's own on a short write (what a full disk gives it mid-member).
 */
export const DISK_FULL = /No space left on device|Disk quota exceeded|Wrote only \d+ of \d+ bytes/;

// A failure the sandbox's file system reported for the path (its tool's message on stderr, by
// strerror's words): the path's doing, not the service's, such as /proc/self/mem's EIO.
const SYSTEM_ERROR = /Input\/output error|Permission denied|Operation not permitted|Invalid argument|No such device|Bad address|Read-only file system|Text file busy|Too many levels of symbolic links|File name too long|Stale file handle|Resource temporarily unavailable|Structure needs cleaning|Value too large/;

/**
 * The answer to a script that failed without a marker: a full disk, a system error on the path
 * (409 file_io_error, the tool's own words in the detail), else undefined (the service's fault, 500).
 */
export function unmarkedFailureError(stderr: string, path: string): ApiError | undefined {
  if (DISK_FULL.test(stderr)) return diskFullError(path);
  const said = SYSTEM_ERROR.exec(stderr);
  if (said) return new ApiError('file_io_error', `The sandbox's file system could not complete the operation on ${JSON.stringify(path)}: ${said[0]}.`);
  return undefined;
}

function diskFullError(path: string): ApiError {
  return new ApiError('insufficient_storage', `The sandbox's disk has no room left for ${JSON.stringify(path)}; free some space and try again.`);
}

export function markerOf(stderr: string): ScriptFailure | undefined {
  const reason = MARKER.exec(stderr)?.[1];
  return reason !== undefined && MARKER_EXIT_REASONS.has(reason) ? (reason as ScriptFailure) : undefined;
}

export function failureError(reason: ScriptFailure, path: string, stderr = ''): ApiError {
  const p = JSON.stringify(path);
  switch (reason) {
    case 'file_not_found':
      return new ApiError('file_not_found', `${p} does not exist in the sandbox.`);
    case 'is_a_directory':
      return new ApiError('is_a_directory', `${p} is a directory.`);
    case 'not_a_directory':
      return new ApiError('not_a_directory', `A component of ${p} is not a directory.`);
    case 'file_exists':
      return new ApiError('file_exists', `${p} already exists; send overwrite=true to replace it.`);
    case 'permission_denied':
      return new ApiError('permission_denied', `The sandbox user cannot access ${p} (or its file system is read-only).`);
    case 'not_a_regular_file':
      return new ApiError('not_a_regular_file', `${p} is not a regular file (a device, FIFO or socket).`);
    case 'disk_full':
      return diskFullError(path);
    case 'directory_not_empty':
      return new ApiError('directory_not_empty', `${p} is a directory with entries; send recursive=true to remove it with them.`);
    case 'into_itself':
      return new ApiError('invalid_request', `A directory cannot be moved into itself (${p}).`);
    case 'io_error':
      return unmarkedFailureError(stderr, path) ?? new ApiError('file_io_error', `The sandbox's file system could not complete the operation on ${p}.`);
  }
}

export function timeoutError(timeoutMs: number): ApiError {
  return new ApiError('operation_timed_out', `The file operation did not finish within ${timeoutMs / 1000} s.`);
}
