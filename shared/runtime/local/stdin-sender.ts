import { STDIN_WINDOW_BYTES } from '../types.ts';

/** Bytes in one `stdin` message at most: a large chunk from the source travels in pieces. */
const MAX_MESSAGE_BYTES = 64 * 1024;

/**
 * Sends a streamed stdin to the spawner within a credit window: it takes the next chunk from the
 * source only when the bytes sent and not yet acknowledged (taken off the spawner's queue for the
 * command's pipe) leave room, so the spawner never holds more than STDIN_WINDOW_BYTES, and the
 * source, hop by hop, goes no faster than the command reads.
 */
export class StdinSender {
  private credit = STDIN_WINDOW_BYTES;
  private waiting: (() => void) | undefined;
  private stopped = false;
  private chunks: AsyncIterator<Uint8Array> | undefined;

  private readonly source: AsyncIterable<Uint8Array>;
  private readonly send: (data: Uint8Array) => void;
  private readonly end: () => void;

  constructor(source: AsyncIterable<Uint8Array>, send: (data: Uint8Array) => void, end: () => void) {
    this.source = source;
    this.send = send;
    this.end = end;
  }

  /** Resolves when the source is sent whole or the sender is stopped; rejects with the source's error. */
  async run(): Promise<void> {
    const chunks = (this.chunks = this.source[Symbol.asyncIterator]());
    for (;;) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await chunks.next();
      } catch (err) {
        if (this.stopped) return;
        throw err;
      }
      if (this.stopped) return;
      if (next.done) return this.end();
      for (let offset = 0; offset < next.value.byteLength; offset += MAX_MESSAGE_BYTES) {
        const piece = next.value.subarray(offset, offset + MAX_MESSAGE_BYTES);
        while (this.credit < piece.byteLength && !this.stopped) await new Promise<void>((resume) => (this.waiting = resume));
        if (this.stopped) return;
        this.credit -= piece.byteLength;
        this.send(piece);
      }
    }
  }

  acknowledge(bytes: number): void {
    this.credit += bytes;
    this.wakeUp();
  }

  /** The command is done: no more is read from the source, whose iterator is returned. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.wakeUp();
    void Promise.resolve(this.chunks?.return?.()).catch(() => undefined);
  }

  private wakeUp(): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.();
  }
}
