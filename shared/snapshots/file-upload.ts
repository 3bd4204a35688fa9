import { createHash } from 'node:crypto';
import { rename, rm, type FileHandle } from 'node:fs/promises';
import { DIGEST_CHUNK_BYTES, digestFrom } from './digest-file.ts';

// A snapshot's copy being written into a file of the directory store (store.ts), under a name of
// its own until whole: by this process (write), or by a program given the file's descriptor
// (file), whose bytes are then followed as they land.

/**
 * What an upload holds, at most, before its writer waits: the chunks that came meanwhile go in
 * one writev. A write awaited chunk by chunk (64 KiB from a pipe) cost a turn of libuv's thread
 * pool each, a third of a snapshot's time.
 */
const WRITE_PENDING_BYTES = 4 * 1024 * 1024;

/** A followed copy is handed to the disk each time this much more was written, not all at its commit. */
const SYNC_EVERY_BYTES = 32 * 1024 * 1024;

/** A SnapshotUpload (store.ts) into a file. */
export class FileUpload {
  readonly #handle: FileHandle;
  readonly #partial: string;
  readonly #final: string;
  #closed = false;

  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #flushing: Promise<void> | undefined;
  /** A write that failed fails every later one, and the commit: no byte is ever dropped unsaid. */
  #failed: unknown;

  readonly #digest = createHash('sha256');
  #buffer: Buffer | undefined;
  #digested = 0;
  #synced = 0;
  #following: Promise<number> = Promise.resolve(0);

  readonly file: { fd: number; follow(): Promise<number>; sha256(): Promise<Buffer> };

  /** `handle` is `partial` opened for reading and writing; the commit names it `final`. */
  constructor(handle: FileHandle, partial: string, final: string) {
    this.#handle = handle;
    this.#partial = partial;
    this.#final = final;
    this.file = {
      fd: handle.fd,
      follow: () => (this.#following = this.#following.then(() => this.#follow())),
      sha256: async () => {
        await this.file.follow();
        return this.#digest.digest();
      },
    };
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (this.#failed) throw this.#failed;
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.byteLength;
    const writing = this.#flushed();
    if (this.#pendingBytes > WRITE_PENDING_BYTES) await writing;
    else writing.catch(() => undefined);
  }

  async commit(): Promise<void> {
    while (this.#flushing || this.#pending.length > 0) await this.#flushed();
    await this.#handle.sync();
    await this.#close();
    await rename(this.#partial, this.#final);
  }

  async abort(): Promise<void> {
    await this.#close().catch(() => undefined);
    await rm(this.#partial, { force: true });
  }

  async #close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#handle.close();
  }

  async #flushed(): Promise<void> {
    if (this.#failed) throw this.#failed;
    this.#flushing ??= this.#flush()
      .catch((err: unknown) => {
        this.#failed = err;
        throw err;
      })
      .finally(() => (this.#flushing = undefined));
    await this.#flushing;
  }

  async #flush(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending;
      this.#pending = [];
      await this.#handle.writev(batch);
      for (const chunk of batch) this.#pendingBytes -= chunk.byteLength;
    }
  }

  /** What landed since the last look, read back from the page cache and digested. */
  async #follow(): Promise<number> {
    this.#digested = await digestFrom(this.#handle, this.#digest, this.#digested, (this.#buffer ??= Buffer.allocUnsafe(DIGEST_CHUNK_BYTES)));
    if (this.#digested - this.#synced >= SYNC_EVERY_BYTES) {
      await this.#handle.datasync();
      this.#synced = this.#digested;
    }
    return this.#digested;
  }
}
