import type { AppDeps } from '../../context.ts';
import { FILE_OP_TIMEOUT_MS } from './limits.ts';
import { MKDIR_SCRIPT, MOVE_SCRIPT, REMOVE_SCRIPT } from './manage-scripts.ts';
import { expectSuccess, runScript } from './run.ts';

/**
 * How long a removal or a move may run: a recursive one, or a move across file systems (a copy),
 * lasts as long as its tree is large.
 */
const TREE_OP_TIMEOUT_MS = 60_000;

/** Removes a file, a symlink (never what it points at) or a directory (with its entries only when recursive). */
export async function removePath(deps: AppDeps, sandboxId: string, path: string, recursive: boolean): Promise<void> {
  const result = await runScript(deps, sandboxId, REMOVE_SCRIPT, [path, recursive ? '1' : '0'], { timeoutMs: TREE_OP_TIMEOUT_MS, maxStdoutBytes: 0 });
  expectSuccess(result, path, TREE_OP_TIMEOUT_MS);
}

/** Renames `from` to `to` (the new name itself), making its parents; 409 file_exists unless overwrite. */
export async function movePath(deps: AppDeps, sandboxId: string, from: string, to: string, overwrite: boolean): Promise<{ path: string }> {
  const result = await runScript(deps, sandboxId, MOVE_SCRIPT, [from, to, overwrite ? '1' : '0'], { timeoutMs: TREE_OP_TIMEOUT_MS, maxStdoutBytes: 0 });
  // The error names the path it is about: only the source can be missing (the destination's parents are made).
  expectSuccess(result, result.stderr.includes('PADDOCK_ERR:file_not_found') ? from : to, TREE_OP_TIMEOUT_MS);
  return { path: to };
}

/** Makes a directory and its parents; one that exists already is success. */
export async function makeDir(deps: AppDeps, sandboxId: string, path: string): Promise<{ path: string }> {
  const result = await runScript(deps, sandboxId, MKDIR_SCRIPT, [path], { timeoutMs: FILE_OP_TIMEOUT_MS, maxStdoutBytes: 0 });
  expectSuccess(result, path, FILE_OP_TIMEOUT_MS);
  return { path };
}
