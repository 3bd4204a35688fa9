// Memory for the reads of a proxy's bulk traffic (the previews' answers, the egress's
// pass-through), used again and again. A fresh buffer for every read is external memory that V8
// reclaims with a full mark-compact every few tens of megabytes: at hundreds of MB/s through a
// process whose heap holds the whole API, those collections were most of its CPU, and half of a
// download's speed.

/** One read: the local agent's relay moves 64 KiB at a time. */
const BUFFER_BYTES = 64 * 1024;

/** Buffers kept for later reads; past these, a buffer given back is left to the collector. */
const KEPT = 64;

/**
 * Buffers for reads, each held while in use: by the read into it until the read's chunk is
 * handled, and by each write of a piece of it until that write is done. Held by none, it serves
 * another read. A chunk not of these buffers (a copy, a Kubernetes frame's) is left alone.
 */
export class ReadBuffers {
  readonly #free: ArrayBuffer[] = [];
  readonly #holds = new WeakMap<ArrayBufferLike, number>();
  readonly #bytes: number;
  readonly #kept: number;

  constructor(options: { bytes?: number; kept?: number } = {}) {
    this.#bytes = options.bytes ?? BUFFER_BYTES;
    this.#kept = options.kept ?? KEPT;
  }

  /** A buffer for the next read, held once (the read's, released once its chunk is handled). */
  next(): Buffer {
    const memory = this.#free.pop() ?? new ArrayBuffer(this.#bytes);
    this.#holds.set(memory, 1);
    return Buffer.from(memory, 0, this.#bytes);
  }

  /** One more hold on the buffer `chunk` is part of: a write of it under way. */
  hold(chunk: Buffer): void {
    const holds = this.#holds.get(chunk.buffer);
    if (holds !== undefined) this.#holds.set(chunk.buffer, holds + 1);
  }

  /** One hold fewer; the last makes the buffer free again. Each hold is released once, and never before its use is done. */
  release(chunk: Buffer): void {
    const memory = chunk.buffer;
    const holds = this.#holds.get(memory);
    if (holds === undefined) return;
    if (holds > 1) return void this.#holds.set(memory, holds - 1);
    this.#holds.delete(memory);
    if (this.#free.length < this.#kept) this.#free.push(memory as ArrayBuffer);
  }
}
