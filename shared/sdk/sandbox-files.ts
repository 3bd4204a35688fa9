import type { PaddockClient } from './client.ts';
import { PaddockApiError } from './errors.ts';
import type { DirEntry, ExtractedArchive, FileStat, RawFileBody, WrittenFile } from './types.ts';

/** Reads and writes one sandbox's files: `sbx.files`. Paths are the sandbox's own. */
export class Filesystem {
  readonly #client: PaddockClient;
  readonly #sandboxId: string;

  /** @internal Made by Sandbox. */
  constructor(client: PaddockClient, sandboxId: string) {
    this.#client = client;
    this.#sandboxId = sandboxId;
  }

  /** A file's bytes as they arrive, or those of one range (`end` inclusive): nothing is held whole. */
  readStream(path: string, range: { start?: number; end?: number } = {}): Promise<ReadableStream<Uint8Array>> {
    return this.#client.readRaw(this.#sandboxId, path, range);
  }

  /** A file's bytes, whole. */
  async read(path: string): Promise<Uint8Array> {
    const stream = await this.#client.readRaw(this.#sandboxId, path);
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
      chunks.push(chunk);
      size += chunk.byteLength;
    }
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, at);
      at += chunk.byteLength;
    }
    return bytes;
  }

  /** A file's content as UTF-8 text. */
  async readText(path: string): Promise<string> {
    return new TextDecoder().decode(await this.read(path));
  }

  /**
   * Writes a file (a string as UTF-8), replacing one that is there and making its parent
   * directories; a stream is sent as it is read.
   */
  write(path: string, data: RawFileBody): Promise<WrittenFile> {
    return this.#client.writeRaw(this.#sandboxId, path, data, { overwrite: true });
  }

  /** The entries of a directory. */
  async list(path: string): Promise<DirEntry[]> {
    return (await this.#client.listDir(this.#sandboxId, path)).entries;
  }

  /** Whether something (a file, a directory, a symlink) is at `path`. */
  async exists(path: string): Promise<boolean> {
    try {
      await this.#client.statPath(this.#sandboxId, path);
      return true;
    } catch (err) {
      if (err instanceof PaddockApiError && err.code === 'file_not_found') return false;
      throw err;
    }
  }

  /** What is at `path`; a final symlink is described, not followed. */
  stat(path: string): Promise<FileStat> {
    return this.#client.statPath(this.#sandboxId, path);
  }

  /** Removes a file, a symlink, or a directory (an empty one, or with everything in it when `recursive`). */
  remove(path: string, opts: { recursive?: boolean } = {}): Promise<void> {
    return this.#client.removePath(this.#sandboxId, path, { recursive: opts.recursive });
  }

  /** Renames `from` to `to` (the new name itself); without `overwrite`, something at `to` is a `file_exists` error. */
  async move(from: string, to: string, opts: { overwrite?: boolean } = {}): Promise<void> {
    await this.#client.movePath(this.#sandboxId, { from, to, overwrite: opts.overwrite });
  }

  /** Makes a directory and its parents; one that exists already is success. */
  async makeDir(path: string): Promise<void> {
    await this.#client.makeDir(this.#sandboxId, path);
  }

  /**
   * Sends a local directory's contents under `path` in the sandbox (default /workspace, made when
   * missing) as a tar produced while the directory is walked and its files read, never held whole.
   * Symlinks go as symlinks, not followed; sockets, fifos and devices are left out. A `localDir`
   * that is not a directory is a LocalArchiveError (`not_a_directory`) before any request.
   * Node only (it reads the local file system).
   */
  async uploadDir(localDir: string, path = '/workspace'): Promise<ExtractedArchive> {
    const { tarOfDir } = await import('./tar-write.ts');
    const tar = await tarOfDir(localDir);
    // Should reading the directory fail, that is the error to throw, not the upload it broke off.
    const read: { failed?: { error: unknown } } = {};
    async function* archive(): AsyncGenerator<Uint8Array, void, undefined> {
      try {
        yield* tar;
      } catch (error) {
        read.failed = { error };
        throw error;
      }
    }
    try {
      return await this.#client.uploadArchive(this.#sandboxId, { path, archive: archive() });
    } catch (err) {
      if (read.failed) throw read.failed.error;
      throw err;
    } finally {
      await tar.return();
    }
  }

  /**
   * Fetches a sandbox directory (default /workspace) into `localDir` (made when missing), extracted
   * as it streams; answers the members written. Files are written under a temporary name and
   * renamed once whole, so a broken download leaves none that looks complete; modes keep their
   * permission bits, never set-id ones. A member that would land outside `localDir` (an absolute
   * name, `..`, a path through a symlink, a symlink pointing out) is a LocalArchiveError
   * (`unsafe_member`) and nothing of it is written. Node only (it writes the local file system).
   */
  async downloadDir(path: string | undefined, localDir: string): Promise<number> {
    const { extractTar } = await import('./tar-read.ts');
    return extractTar(this.#client.downloadArchive(this.#sandboxId, { path }), localDir);
  }
}
