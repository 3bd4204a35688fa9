import type { AppContext } from '../../context.ts';
import { pacedWriter } from '../streaming.ts';
import { JsonStringBytes } from './json-string-bytes.ts';
import { encodeSlice, SLICE_BYTES } from './slices.ts';

// A NUL is six bytes as JSON (\u0000): built whole, a 1 MiB answer was 6 MiB of string and as
// much again as bytes, encoded in one go on the event loop (tens of milliseconds every neighbour
// waited) and held until the client took the last byte. A slice is encoded bytes to bytes
// (json-string-bytes.ts); the output waits as the bytes it came as.

/** Output up to this many bytes is answered in one piece (at most six times as much as JSON). */
const SMALL_ANSWER_BYTES = SLICE_BYTES;
/** The Encoding Standard's decoder, as JsonStringBytes decodes: U+FFFD for invalid bytes, a leading byte-order mark dropped. */
const UTF8 = new TextDecoder('utf-8');

function outputBytes(outputs: Record<string, Buffer[]>): number {
  let total = 0;
  for (const parts of Object.values(outputs)) for (const part of parts) total += part.length;
  return total;
}

/**
 * A buffered exec's answer: one JSON document; with more than SMALL_ANSWER_BYTES of output,
 * written a slice at a time as the client takes it, a turn of the event loop between slices.
 * `head` holds the small fields; `outputs` each output field's bytes in the parts they came in,
 * decoded as UTF-8 as they are written (invalid bytes as U+FFFD). A client that takes nothing for
 * `writeTimeoutMs` is dropped, as a streamed answer's is (a small answer, by the write deadline).
 * The slices go through buffers used again (slices.ts), so the answer is written to the response
 * here rather than through a stream Koa pipes.
 */
export function sendJsonAnswer(ctx: AppContext, head: Record<string, unknown>, outputs: Record<string, Buffer[]>, writeTimeoutMs: number): void {
  const res = ctx.res;
  ctx.status = 200;
  ctx.type = 'application/json';
  if (outputBytes(outputs) <= SMALL_ANSWER_BYTES) {
    // Most answers are small: whole at once, as Koa answers any body. Paced, each took three turns
    // of the event loop more, and under a burst of other requests every turn is a long one.
    const texts = Object.entries(outputs).map(([name, parts]) => [name, UTF8.decode(parts.length === 1 ? parts[0] : Buffer.concat(parts))]);
    ctx.body = JSON.stringify({ ...head, ...Object.fromEntries(texts) });
    return;
  }
  ctx.respond = false;
  // Nothing more is encoded once the client is gone or dropped (gone): the rest is let go.
  const { write: put, gone } = pacedWriter(res, writeTimeoutMs, () => res.destroy(), ctx.state.session);
  void (async () => {
    // Begun once the middleware has unwound, as Koa would begin it.
    await new Promise(setImmediate);
    await put(JSON.stringify(head).slice(0, -1));
    for (const [name, parts] of Object.entries(outputs)) {
      await put(`,${JSON.stringify(name)}:"`);
      const encoder = new JsonStringBytes();
      for (const part of parts) {
        for (let at = 0; at < part.length; at += SLICE_BYTES) {
          // A socket that takes everything at once (loopback buffers megabytes) would otherwise
          // see the whole answer encoded in one turn.
          await new Promise(setImmediate);
          if (gone()) return;
          const slice = encodeSlice(encoder, part.subarray(at, at + SLICE_BYTES));
          if (slice) await put(slice.bytes, slice.written);
        }
      }
      const rest = encoder.end();
      if (rest.length > 0) await put(rest);
      await put('"');
    }
    await put('}');
    if (!gone()) res.end();
  })();
}
