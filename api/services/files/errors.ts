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
  | 'io_error';

export const MARKER_EXIT_REASONS: ReadonlySet<string> = new Set<ScriptFailure>([
  'file_not_found',
  'is_a_directory',
  'not_a_directory',
  'file_exists',
  'permission_denied',
  'not_a_regular_file',
  'io_error',
]);

export function markerOf(stderr: string): ScriptFailure | undefined {
  const reason = MARKER.exec(stderr)?.[1];
  return reason !== undefined && MARKER_EXIT_REASONS.has(reason) ? (reason as ScriptFailure) : undefined;
}

export function failureError(reason: ScriptFailure, path: string): ApiError {
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
    case 'io_error':
      return new ApiError('internal_error', `The sandbox could not complete the operation on ${p}.`);
  }
}

export function timeoutError(timeoutMs: number): ApiError {
  return new ApiError('operation_timed_out', `The file operation did not finish within ${timeoutMs / 1000} s.`);
}
