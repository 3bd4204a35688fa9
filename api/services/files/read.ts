import { ApiError } from '../../../shared/errors.ts';
import type { AppDeps } from '../../context.ts';
import { FILE_OP_TIMEOUT_MS } from './limits.ts';
import { expectSuccess, runScript } from './run.ts';
import { READ_SCRIPT } from './scripts.ts';

/** The file's bytes, read in the sandbox; 413 file_too_large past PADDOCK_FILE_MAX_BYTES. */
export async function readFileBytes(deps: AppDeps, sandboxId: string, path: string): Promise<Buffer> {
  const max = deps.config.PADDOCK_FILE_MAX_BYTES;
  // One byte more than allowed tells a file that is too large from one exactly at the limit.
  const result = await runScript(deps, sandboxId, READ_SCRIPT, [path, String(max + 1)], {
    timeoutMs: FILE_OP_TIMEOUT_MS,
    maxStdoutBytes: max + 1,
  });
  expectSuccess(result, path, FILE_OP_TIMEOUT_MS);
  if (result.stdout.length > max) throw tooLarge(path, max);
  return result.stdout;
}

export function tooLarge(path: string, max: number): ApiError {
  return new ApiError('file_too_large', `${JSON.stringify(path)} is larger than the ${max}-byte file limit.`, {
    extra: { limitBytes: max },
  });
}
