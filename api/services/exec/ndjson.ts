import type { AppContext } from '../../context.ts';
import { bytesMoved } from '../../../shared/reclaim.ts';
import { abortOnDisconnect, pacedWriter, type Sink } from '../streaming.ts';
import { REVOKED_DETAIL, type KeySession } from '../../auth/key-sessions.ts';
import { JsonStringBytes } from './json-string-bytes.ts';
import { encodeSlice, SLICE_BYTES } from './slices.ts';

const NDJSON = 'application/x-ndjson';

/** Writes whole lines; `written` runs once the sink is done with them (for buffers used again). */
export type LineWriter = (lines: string | Buffer, written?: (err?: Error | null) => void) => void | Promise<void>;

/**
 * An NDJSON body on `sink` that honours the client's pace: `line` answers a promise while the
 * client is behind, which the exec's output waits on (and so, hop by hop, the command itself). A
 * client that takes nothing for `writeTimeoutMs` is dropped: `onStall` runs (it stops the command)
 * and the sink is destroyed, so a reader that never reads holds a bounded buffer, briefly.
 */
export function ndjsonBody(sink: Sink, writeTimeoutMs: number, onStall: () => void, session?: KeySession) {
  const { write, gone } = pacedWriter(sink, writeTimeoutMs, onStall, session);
  return { line: jsonLines(write), write: write as LineWriter, gone };
}

/** Writes a value as one NDJSON line through `write`. */
function jsonLines(write: LineWriter): (value: unknown) => void | Promise<void> {
  return (value) => write(`${JSON.stringify(value)}\n`);
}

const LINE_END = Buffer.from('"}\n');

/**
 * One output stream of a command as NDJSON lines: what `line({ type, data })` writes for each
 * chunk's text, a line per SLICE_BYTES of it at most, encoded bytes to bytes
 * (json-string-bytes.ts) into buffers used again (slices.ts) instead of through strings. `end`
 * writes what a character left unfinished at the end becomes.
 */
export function outputLines(type: 'stdout' | 'stderr', write: LineWriter) {
  const encoder = new JsonStringBytes();
  const around = { head: Buffer.from(`{"type":${JSON.stringify(type)},"data":"`), tail: LINE_END };
  const emit = (line: Buffer, written?: (err?: Error | null) => void): void | Promise<void> => {
    bytesMoved(line.length);
    return write(line, written);
  };
  /** The slices from `from` on, waiting only where the client is behind. */
  const chunk = (bytes: Buffer, from = 0): void | Promise<void> => {
    for (let at = from; at < bytes.length; at += SLICE_BYTES) {
      const slice = encodeSlice(encoder, bytes.subarray(at, at + SLICE_BYTES), around);
      const wait = slice && emit(slice.bytes, slice.written);
      if (wait) return wait.then(() => chunk(bytes, at + SLICE_BYTES));
    }
  };
  return {
    chunk,
    end: (): void | Promise<void> => {
      const rest = encoder.end(around);
      if (rest.length > 0) return emit(rest);
    },
  };
}

/**
 * Starts a streamed NDJSON answer: 200, the lines written to the response itself (outputLines'
 * buffers are used again once the socket has taken them, which only the response's own write
 * callback tells), paced by the client (ndjsonBody) and sent only while the request's key is
 * confirmed, and `abort` fired when the client goes before the end, stalls past
 * PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS or the key is revoked (the last line is then an
 * invalid_credential error). The caller feeds `line` (or `write`, whole lines) and calls `end`
 * once, after its last line.
 */
export function startNdjsonAnswer(ctx: AppContext, writeTimeoutMs: number) {
  const res = ctx.res;
  const abort = abortOnDisconnect(ctx);
  const session = ctx.state.session;
  ctx.status = 200;
  ctx.type = NDJSON;
  ctx.respond = false;
  const body = ndjsonBody(
    res,
    writeTimeoutMs,
    () => {
      abort.abort();
      res.destroy();
    },
    session,
  );
  // Written past the gate that now refuses everything: the stream's end, not the account's data.
  session?.onRevoked(() => {
    if (!res.writableEnded && !res.destroyed) res.end(`${JSON.stringify({ type: 'error', code: 'invalid_credential', detail: REVOKED_DETAIL })}\n`);
  });
  // Begun once the middleware has unwound, as Koa would begin it; what comes before waits, in order.
  let started: Promise<void> | undefined = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
    started = undefined;
  });
  /**
   * The latest write not yet handed to the response (it waits for the key's next check): the end
   * comes after it. Such writes go in the order they were made, so waiting for the latest waits
   * for them all; without it a last line made as a check fell due (a busy host) was lost behind
   * the end, and the client saw the stream stop before the command's exit.
   */
  let unsent: Promise<unknown> | undefined;
  const write: LineWriter = (lines, written) => {
    const sent = started ? started.then(() => body.write(lines, written)) : body.write(lines, written);
    if (sent) unsent = sent.catch(() => undefined);
    return sent;
  };
  const line = jsonLines(write);
  const end = (): void => {
    if (started) return void started.then(end);
    const waiting = unsent;
    unsent = undefined;
    // Once it is sent, a line written meanwhile is waited for in turn.
    if (waiting) void waiting.then(end);
    else if (!body.gone()) res.end();
  };
  return { line, write, end, abort };
}
