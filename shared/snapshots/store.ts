import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { Config } from '../config.ts';
import { isId } from '../ids.ts';
import { DIGEST_CHUNK_BYTES, digestFrom } from './digest-file.ts';
import { FileUpload } from './file-upload.ts';

// Where snapshots' bytes live: a directory every API and worker process reaches (the data
// directory by default; for a cluster, a ReadWriteMany volume mounted at the same path in every
// pod, docs/deploy.md). One file a snapshot, named by its id; a copy being written has a name of
// its own until it is whole, so no reader ever sees part of one.

/**
 * A snapshot's bytes being written. A write's chunk is the upload's from then on (not to be
 * changed); it resolves once what waits to be written is under a bound, so a slow file system
 * holds its writer back.
 */
export interface SnapshotUpload {
  write(chunk: Uint8Array): Promise<void>;
  /**
   * Where the copy is a file: its descriptor, for a program to write the bytes to directly in
   * place of write() (nothing then passes through this process), and what it holds so far.
   */
  file?: {
    fd: number;
    /**
     * Digests what was written since the last call, so the digest follows the file as the program
     * writes it (and the file system is given what was written, a piece at a time, rather than all
     * of it at the commit): the bytes written so far. Calls overlapping are taken in turn.
     */
    follow(): Promise<number>;
    /** Follows to the end: the whole file's SHA-256. */
    sha256(): Promise<Buffer>;
  };
  /** The copy is whole: it takes the snapshot's name. */
  commit(): Promise<void>;
  /** The copy is given up: nothing of it is kept. */
  abort(): Promise<void>;
}

/** A stored snapshot's file, open for reading: a program given its descriptor reads it directly. */
export interface StoredSnapshotFile {
  fd: number;
  /** The whole file read (positioned reads: the descriptor's own offset stays the program's): its size and SHA-256. */
  digest(): Promise<{ sizeBytes: number; sha256: Buffer }>;
  close(): Promise<void>;
}

export interface SnapshotStore {
  create(id: string): Promise<SnapshotUpload>;
  /** The snapshot's bytes, read as they are taken. */
  read(id: string): Readable;
  /** Where the store is a file system: the snapshot's file, opened (ENOENT when it is gone). */
  open?(id: string): Promise<StoredSnapshotFile>;
  remove(id: string): Promise<void>;
}

export type SnapshotStoreOptions = Pick<Config, 'PADDOCK_SNAPSHOT_DIR' | 'PADDOCK_DATA_DIR'>;

export function snapshotStore(options: SnapshotStoreOptions): SnapshotStore {
  return new DirectorySnapshotStore(resolve(options.PADDOCK_SNAPSHOT_DIR ?? join(options.PADDOCK_DATA_DIR, 'snapshots')));
}

const READ_CHUNK_BYTES = 256 * 1024;

export class DirectorySnapshotStore implements SnapshotStore {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  async create(id: string): Promise<SnapshotUpload> {
    const final = this.#path(id);
    const partial = `${final}.partial`;
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    // Read too: a copy a program writes straight to it is digested from it.
    return new FileUpload(await open(partial, 'w+', 0o600), partial, final);
  }

  read(id: string): Readable {
    return createReadStream(this.#path(id), { highWaterMark: READ_CHUNK_BYTES });
  }

  async open(id: string): Promise<StoredSnapshotFile> {
    const handle = await open(this.#path(id), 'r');
    return {
      fd: handle.fd,
      digest: async () => {
        const hash = createHash('sha256');
        const sizeBytes = await digestFrom(handle, hash, 0, Buffer.allocUnsafe(DIGEST_CHUNK_BYTES));
        return { sizeBytes, sha256: hash.digest() };
      },
      close: () => handle.close(),
    };
  }

  async remove(id: string): Promise<void> {
    await rm(this.#path(id), { force: true });
    await rm(`${this.#path(id)}.partial`, { force: true });
  }

  #path(id: string): string {
    // Ids are made here (snap_ and 24 of [0-9a-z]): never a path of a request's choosing.
    if (!isId('snap', id)) throw new Error(`not a snapshot id: ${id}`);
    return join(this.#dir, `${id}.tar.zst`);
  }
}
