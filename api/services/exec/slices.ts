import { JsonStringBytes } from './json-string-bytes.ts';

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

/** A buffer of SLICE_ROOM bytes to encode one slice into. */
export function takeSliceBuffer(): Buffer {
  return free.pop() ?? Buffer.allocUnsafeSlow(SLICE_ROOM);
}

/**
 * The write callback that gives `buffer` back once the socket has taken it. A buffer the socket
 * never took (it closed: `err`) is not used again: it may still be queued.
 */
export function giveBackWhenWritten(buffer: Buffer): (err?: Error | null) => void {
  return (err) => {
    if (!err && free.length < KEEP) free.push(buffer);
  };
}

/** Gives back a buffer that nothing was written from. */
export function giveBackUnused(buffer: Buffer): void {
  if (free.length < KEEP) free.push(buffer);
}
