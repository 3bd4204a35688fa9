import { ApiError } from '../../../shared/errors.ts';
import type { AppDeps } from '../../context.ts';
import { readFileBytes } from './read.ts';
import { writeFileBytes } from './write.ts';

export interface EditRequest {
  path: string;
  oldText: string;
  newText: string;
  replaceAll: boolean;
}

export interface EditResult {
  path: string;
  replacements: number;
}

/**
 * Replaces oldText by newText in the bytes (the UTF-8 of both), so a file that is not all UTF-8
 * can still be edited where it is. Without replaceAll, oldText must occur exactly once, counting
 * overlapping occurrences ("aa" occurs twice in "aaa": which one is meant is ambiguous); with it,
 * every non-overlapping occurrence from the left is replaced, as String.replaceAll does.
 */
export function replaceBytes(
  content: Buffer,
  oldText: string,
  newText: string,
  replaceAll: boolean,
  path = '',
): { bytes: Buffer; replacements: number } {
  const needle = Buffer.from(oldText, 'utf8');
  const first = content.indexOf(needle);
  if (needle.length === 0 || first === -1) {
    throw new ApiError('edit_no_match', `oldText does not occur in ${JSON.stringify(path)}.`);
  }
  if (!replaceAll) {
    const second = content.indexOf(needle, first + 1);
    if (second !== -1) {
      const detail = `oldText occurs more than once in ${JSON.stringify(path)}; give more context or set replaceAll.`;
      throw new ApiError('edit_ambiguous', detail, { extra: { occurrences: countOccurrences(content, needle) } });
    }
  }
  const replacement = Buffer.from(newText, 'utf8');
  const parts: Buffer[] = [];
  let from = 0;
  let replacements = 0;
  for (let at = first; at !== -1; at = replaceAll ? content.indexOf(needle, from) : -1) {
    parts.push(content.subarray(from, at), replacement);
    from = at + needle.length;
    replacements++;
  }
  parts.push(content.subarray(from));
  return { bytes: Buffer.concat(parts), replacements };
}

function countOccurrences(content: Buffer, needle: Buffer): number {
  let n = 0;
  for (let at = content.indexOf(needle); at !== -1; at = content.indexOf(needle, at + 1)) n++;
  return n;
}

/**
 * Read, replace here, write back atomically (the file keeps its mode). A write to the file by
 * someone else between the read and the write is overwritten: the edit is not a transaction.
 */
export async function editFile(deps: AppDeps, sandboxId: string, request: EditRequest): Promise<EditResult> {
  const content = await readFileBytes(deps, sandboxId, request.path);
  const { bytes, replacements } = replaceBytes(content, request.oldText, request.newText, request.replaceAll, request.path);
  await writeFileBytes(deps, sandboxId, request.path, bytes, true);
  return { path: request.path, replacements };
}
