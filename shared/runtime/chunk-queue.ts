/**
 * Chunks that arrive by message (IPC, WebSocket frames), read as an async iterable. It holds what
 * its feeder pushed: the feeder bounds that (a credit window, a paused socket), told through
 * onTaken as each chunk leaves. A reader that stops early drops the rest, and what comes later.
 */
export class ChunkQueue implements AsyncIterable<Uint8Array> {
  private chunks: Uint8Array[] = [];
  private ended = false;
  private wake: (() => void) | undefined;
  /** Bytes pushed and not yet taken by the reader. */
  queued = 0;

  private readonly onTaken: ((bytes: number) => void) | undefined;

  constructor(onTaken?: (bytes: number) => void) {
    this.onTaken = onTaken;
  }

  push(chunk: Uint8Array): void {
    if (this.ended || chunk.byteLength === 0) return;
    this.chunks.push(chunk);
    this.queued += chunk.byteLength;
    this.wake?.();
  }

  /** No more chunks: the reader sees the end once it has taken those queued. */
  end(): void {
    this.ended = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        const chunk = this.chunks.shift();
        if (chunk) {
          this.queued -= chunk.byteLength;
          this.onTaken?.(chunk.byteLength);
          yield chunk;
          continue;
        }
        if (this.ended) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
      }
    } finally {
      this.ended = true;
      this.chunks = [];
      this.queued = 0;
    }
  }
}
