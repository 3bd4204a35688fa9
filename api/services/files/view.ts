import { ApiError } from '../../../shared/errors.ts';
import type { AppDeps } from '../../context.ts';
import { readFileBytes, tooLarge } from './read.ts';
import { FILE_OP_TIMEOUT_MS } from './limits.ts';
import { expectSuccess, runScript } from './run.ts';
import { VIEW_RANGE_SCRIPT } from './scripts.ts';

// Lines are cut at "\n" bytes, on the bytes themselves: a "\n" is never part of a multi-byte
// UTF-8 sequence, so a range of a UTF-8 file is UTF-8 too, and binary files have lines as well.
// A range's content is its lines' exact bytes, newlines included, so the ranges of a file joined
// are the file.

export type ViewEncoding = 'auto' | 'utf-8' | 'base64';

export interface ViewRequest {
  path: string;
  startLine?: number;
  endLine?: number;
  encoding: ViewEncoding;
}

export interface FileView {
  path: string;
  /** Set when the content is answered as text. */
  content?: string;
  /** Set instead of content when the bytes are not valid UTF-8, or base64 was asked for. */
  contentBase64?: string;
  encoding: 'utf-8' | 'base64';
  startLine: number;
  endLine: number;
  totalLines: number;
  /** Lines follow endLine: the answer is not the rest of the file. */
  truncated: boolean;
  /** The whole file's size in bytes. */
  size: number;
}

export interface LineRange {
  startLine: number;
  endLine: number;
  totalLines: number;
  bytes: Buffer;
}

/**
 * Lines startLine..endLine (1-based, inclusive; endLine past the end is clamped). One byte loop
 * that remembers only the two offsets asked for and a count: no index of every line, which for a
 * file of newlines alone would be millions of entries (a line starts at 0 and after every "\n"
 * but a final one).
 */
export function selectLines(bytes: Buffer, startLine = 1, endLine?: number): LineRange {
  let totalLines = bytes.length > 0 ? 1 : 0;
  let from = startLine === 1 ? 0 : bytes.length;
  let to = bytes.length;
  const last = bytes.length - 1;
  for (let i = 0; i < last; i++) {
    if (bytes[i] !== 10) continue;
    totalLines++; // the line starting at i + 1
    if (totalLines === startLine) from = i + 1;
    if (endLine !== undefined && totalLines === endLine + 1) to = i + 1;
  }
  return rangeOf(bytes.subarray(from, to), startLine, endLine, totalLines);
}

function refuseInverted(startLine: number, endLine: number | undefined): void {
  if (endLine !== undefined && endLine < startLine) {
    throw new ApiError('invalid_request', `query.endLine: must not be less than startLine (${startLine}).`);
  }
}

function rangeOf(bytes: Buffer, startLine: number, endLine: number | undefined, totalLines: number): LineRange {
  refuseInverted(startLine, endLine);
  if (startLine > Math.max(totalLines, 1)) {
    throw new ApiError('invalid_request', `query.startLine: the file has ${totalLines} line${totalLines === 1 ? '' : 's'}.`, {
      extra: { totalLines },
    });
  }
  return { startLine, endLine: Math.min(endLine ?? totalLines, totalLines), totalLines, bytes };
}

/**
 * A range cut in the sandbox (VIEW_RANGE_SCRIPT): only its bytes reach the API, whatever the
 * file's size. Lines as selectLines counts them: one per "\n", and one more for bytes after the last.
 */
async function readRange(deps: AppDeps, sandboxId: string, path: string, startLine: number, endLine: number | undefined) {
  refuseInverted(startLine, endLine);
  const max = deps.config.PADDOCK_FILE_MAX_BYTES;
  const count = endLine === undefined ? '' : String(endLine - startLine + 1);
  const result = await runScript(deps, sandboxId, VIEW_RANGE_SCRIPT, [path, String(max), String(startLine), count], {
    timeoutMs: FILE_OP_TIMEOUT_MS,
    maxStdoutBytes: max + 64,
  });
  expectSuccess(result, path, FILE_OP_TIMEOUT_MS);
  const header = result.stdout.indexOf(10);
  const [newlines = NaN, size = NaN, endsWithNewline = NaN] = result.stdout.subarray(0, header).toString('latin1').trim().split(/\s+/).map(Number);
  if (header < 0 || ![newlines, size, endsWithNewline].every(Number.isSafeInteger)) throw new Error(`view script answered no header: ${result.stdout.subarray(0, 80).toString('latin1')}`);
  if (size > max) throw tooLarge(path, max);
  const totalLines = size === 0 ? 0 : newlines + (endsWithNewline === 1 ? 0 : 1);
  return { range: rangeOf(result.stdout.subarray(header + 1, header + 1 + size), startLine, endLine, totalLines), size };
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const utf8Lossy = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** Text when the bytes are UTF-8 (or text is forced, lossily), else base64. */
export function encodeContent(bytes: Buffer, encoding: ViewEncoding): Pick<FileView, 'content' | 'contentBase64' | 'encoding'> {
  if (encoding === 'base64') return { contentBase64: bytes.toString('base64'), encoding: 'base64' };
  if (encoding === 'utf-8') return { content: utf8Lossy.decode(bytes), encoding: 'utf-8' };
  try {
    return { content: utf8.decode(bytes), encoding: 'utf-8' };
  } catch {
    return { contentBase64: bytes.toString('base64'), encoding: 'base64' };
  }
}

export async function viewFile(deps: AppDeps, sandboxId: string, request: ViewRequest): Promise<FileView> {
  let range: LineRange;
  let size: number;
  if (request.startLine === undefined && request.endLine === undefined) {
    // The whole file: its bytes are the answer, read once.
    const bytes = await readFileBytes(deps, sandboxId, request.path);
    ({ range, size } = { range: selectLines(bytes), size: bytes.length });
  } else {
    ({ range, size } = await readRange(deps, sandboxId, request.path, request.startLine ?? 1, request.endLine));
  }
  return {
    path: request.path,
    ...encodeContent(range.bytes, request.encoding),
    startLine: range.startLine,
    endLine: range.endLine,
    totalLines: range.totalLines,
    truncated: range.endLine < range.totalLines,
    size,
  };
}
