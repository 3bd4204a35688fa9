import { PassThrough } from 'node:stream';
import type { AppContext } from '../../context.ts';
import { bytesMoved } from '../../../shared/reclaim.ts';
import { abortOnDisconnect, pacedWriter } from '../streaming.ts';
import { JsonStringBytes } from './json-string-bytes.ts';

const NDJSON = 'application/x-ndjson';

/**
 * An NDJSON response body that honours the client's pace: `line` answers a promise while the
 * client is behind, which the exec's output waits on (and so, hop by hop, the command itself). A
 * client that takes nothing for `writeTimeoutMs` is dropped: `onStall` runs (it stops the command)
 * and the stream is destroyed, so a reader that never reads holds a bounded buffer, briefly.
 */
export function ndjsonBody(writeTimeoutMs: number, onStall: () => void) {
  const stream = new PassThrough();
  /** One or more whole lines, as they go on the wire. */
  const { write } = pacedWriter(stream, writeTimeoutMs, onStall);
  const line = (value: unknown): void | Promise<void> => write(`${JSON.stringify(value)}\n`);
  return { stream, line, write };
}

const LINE_END = Buffer.from('"}\n');

/**
 * One output stream of a command as NDJSON lines, each chunk its line: what
 * `line({ type, data })` writes for the chunk's text, encoded bytes to bytes (json-string-bytes.ts)
 * instead of through strings. `end` writes what a character left unfinished at the end becomes.
 */
export function outputLines(type: 'stdout' | 'stderr', write: (lines: Buffer) => void | Promise<void>) {
  const encoder = new JsonStringBytes();
  const around = { head: Buffer.from(`{"type":${JSON.stringify(type)},"data":"`), tail: LINE_END };
  const emit = (line: Buffer): void | Promise<void> => {
    if (line.length === 0) return;
    bytesMoved(line.length);
    return write(line);
  };
  return { chunk: (bytes: Buffer) => emit(encoder.encode(bytes, around)), end: () => emit(encoder.end(around)) };
}

/**
 * Starts a streamed NDJSON answer: 200, the body a paced stream (ndjsonBody), and `abort` fired
 * when the client goes before the end or stalls past PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS. The
 * caller feeds `line` (or `write`, whole lines as bytes) and ends `stream`.
 */
export function startNdjsonAnswer(ctx: AppContext, writeTimeoutMs: number) {
  const abort = abortOnDisconnect(ctx);
  const { stream, line, write } = ndjsonBody(writeTimeoutMs, () => {
    abort.abort();
    ctx.res.destroy();
  });
  ctx.status = 200;
  ctx.type = NDJSON;
  ctx.body = stream;
  return { stream, line, write, abort };
}
