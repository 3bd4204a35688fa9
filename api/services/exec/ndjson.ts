import { PassThrough } from 'node:stream';
import type { AppContext } from '../../context.ts';
import { abortOnDisconnect, drained } from '../streaming.ts';

const NDJSON = 'application/x-ndjson';

/**
 * An NDJSON response body that honours the client's pace: `line` answers a promise while the
 * client is behind, which the exec's output waits on (and so, hop by hop, the command itself). A
 * client that takes nothing for `writeTimeoutMs` is dropped: `onStall` runs (it stops the command)
 * and the stream is destroyed, so a reader that never reads holds a bounded buffer, briefly.
 */
export function ndjsonBody(writeTimeoutMs: number, onStall: () => void) {
  const stream = new PassThrough();
  let stalled = false;
  const line = (value: unknown): void | Promise<void> => {
    if (stalled || stream.destroyed) return;
    if (stream.write(`${JSON.stringify(value)}\n`)) return;
    return drained(stream, writeTimeoutMs, () => {
      stalled = true;
      onStall();
    });
  };
  return { stream, line };
}

/**
 * Starts a streamed NDJSON answer: 200, the body a paced stream (ndjsonBody), and `abort` fired
 * when the client goes before the end or stalls past PADDOCK_STREAM_WRITE_TIMEOUT_SECONDS. The
 * caller feeds `line` and ends `stream`.
 */
export function startNdjsonAnswer(ctx: AppContext, writeTimeoutMs: number) {
  const abort = abortOnDisconnect(ctx);
  const { stream, line } = ndjsonBody(writeTimeoutMs, () => {
    abort.abort();
    ctx.res.destroy();
  });
  ctx.status = 200;
  ctx.type = NDJSON;
  ctx.body = stream;
  return { stream, line, abort };
}
