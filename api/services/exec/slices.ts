import { JsonStringBytes, type Around } from './json-string-bytes.ts';

// A command's output goes to its client encoded a slice at a time (JSON-escaped, up to six bytes
// a byte), into buffers that are used again once a socket has taken what they held: a fresh
// buffer a slice was 6 MiB of garbage for a 1 MiB flood of NULs, and the collections that cost
// paused every neighbour's request. Only a write's own callback tells when the socket is done with
// a buffer, so an answer that uses these writes to the response itself, not through a stream Koa
// pipes (whose write callback fires as soon as the pipe has passed the bytes on).

/** Bytes of output encoded at a time. */
export const SLICE_BYTES = 16 * 1024;

/** Room for a slice's worst case, and for an NDJSON line's head and tail around it. */
const SLICE_ROOM = JsonStringBytes.room(SLICE_BYTES) + 64;

/** Buffers kept for the next answers; more in flight at once are let go when they come back. */
const KEEP = 32;
const free: Buffer[] = [];

/** One slice encoded into a buffer of the pool, and the write callback that gives it back. */
export interface EncodedSlice {
  bytes: Buffer;
  /** Gives the buffer back once the socket has taken it; one the socket never took (`err`: it closed) may still be queued, and is let go. */
  written: (err?: Error | null) => void;
}

/**
 * `bytes` (at most SLICE_BYTES of output) encoded by `encoder` into a buffer of the pool, between
 * `around`'s head and tail when given; undefined when the encoder wrote nothing (it holds the
 * start of a character), and the buffer is given back at once.
 */
export function encodeSlice(encoder: JsonStringBytes, bytes: Uint8Array, around?: Around): EncodedSlice | undefined {
  const buffer = free.pop() ?? Buffer.allocUnsafeSlow(SLICE_ROOM);
  const start = around ? around.head.length : 0;
  if (around) buffer.set(around.head, 0);
  let end = encoder.encodeInto(bytes, buffer, start);
  if (end === start) {
    giveBack(buffer);
    return undefined;
  }
  if (around) {
    buffer.set(around.tail, end);
    end += around.tail.length;
  }
  return { bytes: buffer.subarray(0, end), written: (err) => void (err ? undefined : giveBack(buffer)) };
}

function giveBack(buffer: Buffer): void {
  if (free.length < KEEP) free.push(buffer);
}
