import type { Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';

/** A stored copy is digested this much a read: under a millisecond of SHA-256 each. */
export const DIGEST_CHUNK_BYTES = 1024 * 1024;

/**
 * `handle`'s bytes from `from` to its end read into `buffer`, one buffer used again and again (a
 * fresh one a read, as a stream's, cost four times as much, in page faults, and held the process
 * tens of MB up until V8 collected them), and given to `hash`: the offset reached. Positioned
 * reads: a program reading the same descriptor keeps its own offset.
 */
export async function digestFrom(handle: FileHandle, hash: Hash, from: number, buffer: Buffer): Promise<number> {
  let at = from;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, at);
    if (bytesRead === 0) return at;
    hash.update(buffer.subarray(0, bytesRead));
    at += bytesRead;
  }
}
