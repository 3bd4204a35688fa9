import { PassThrough } from 'node:stream';
import type { AppContext } from '../../context.ts';
import { pacedWriter } from '../streaming.ts';
import { JsonStringBytes } from './json-string-bytes.ts';
import { bytesMoved } from '../../../shared/reclaim.ts';

// Bytes of output encoded at a time. A NUL is six bytes as JSON (\u0000): built whole, a 1 MiB
// answer was 6 MiB of string and as much again as bytes, encoded in one go on the event loop (tens
// of milliseconds every neighbour waited) and held until the client took the last byte. A slice
// is encoded bytes to bytes (json-string-bytes.ts); the output waits as the bytes it came as.
const SLICE_BYTES = 16 * 1024;

/**
 * A buffered exec's answer: one JSON document, written a slice at a time as the client takes it,
 * a turn of the event loop between slices. `head` holds the small fields; `outputs` each output
 * field's bytes in the parts they came in, decoded as UTF-8 as they are written (invalid bytes as
 * U+FFFD). A client that takes nothing for `writeTimeoutMs` is dropped, as a streamed answer's is.
 */
export function sendJsonAnswer(ctx: AppContext, head: Record<string, unknown>, outputs: Record<string, Buffer[]>, writeTimeoutMs: number): void {
  const stream = new PassThrough();
  ctx.status = 200;
  ctx.type = 'application/json';
  ctx.body = stream;
  // Nothing more is encoded once the client is gone or dropped (gone): the rest is let go.
  const { write: put, gone } = pacedWriter(stream, writeTimeoutMs, () => ctx.res.destroy());
  void (async () => {
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
          const json = encoder.encode(part.subarray(at, at + SLICE_BYTES));
          bytesMoved(json.length);
          if (json.length > 0) await put(json);
        }
      }
      const rest = encoder.end();
      if (rest.length > 0) await put(rest);
      await put('"');
    }
    await put('}');
    stream.end();
  })();
}
