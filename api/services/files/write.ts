import type { AppDeps } from '../../context.ts';
import { FILE_OP_TIMEOUT_MS } from './limits.ts';
import { tooLarge } from './read.ts';
import { expectSuccess, runScript } from './run.ts';
import { WRITE_SCRIPT } from './scripts.ts';

export interface WrittenFile {
  path: string;
  size: number;
  /** The file existed and was replaced. */
  overwritten: boolean;
}

/**
 * Writes `bytes` to `path` in the sandbox atomically (a temporary file renamed over it), creating
 * its parent directories. With overwrite false an existing file answers 409 file_exists.
 */
export async function writeFileBytes(
  deps: AppDeps,
  sandboxId: string,
  path: string,
  bytes: Uint8Array,
  overwrite: boolean,
): Promise<WrittenFile> {
  const max = deps.config.PADDOCK_FILE_MAX_BYTES;
  if (bytes.byteLength > max) throw tooLarge(path, max);
  const result = await runScript(deps, sandboxId, WRITE_SCRIPT, [path, overwrite ? 'replace' : 'create'], {
    stdin: bytes,
    timeoutMs: FILE_OP_TIMEOUT_MS,
    maxStdoutBytes: 16,
  });
  expectSuccess(result, path, FILE_OP_TIMEOUT_MS);
  return { path, size: bytes.byteLength, overwritten: result.stdout.toString() === '1' };
}
