import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { Config } from '../config.ts';
import { isId } from '../ids.ts';

// Where snapshots' bytes live: a directory every API and worker process reaches (the data
// directory by default; for a cluster, a ReadWriteMany volume mounted at the same path in every
// pod, docs/deploy.md). One file a snapshot, named by its id; a copy being written has a name of
// its own until it is whole, so no reader ever sees part of one.

/** A snapshot's bytes being written: each write resolves once the bytes are with the file system. */
export interface SnapshotUpload {
  write(chunk: Uint8Array): Promise<void>;
  /** The copy is whole: it takes the snapshot's name. */
  commit(): Promise<void>;
  /** The copy is given up: nothing of it is kept. */
  abort(): Promise<void>;
}

export interface SnapshotStore {
  create(id: string): Promise<SnapshotUpload>;
  /** The snapshot's bytes, read as they are taken. */
  read(id: string): Readable;
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
    const file = await open(partial, 'w', 0o600);
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await file.close();
    };
    return {
      write: async (chunk) => {
        await file.write(chunk);
      },
      commit: async () => {
        await file.sync();
        await close();
        await rename(partial, final);
      },
      abort: async () => {
        await close().catch(() => undefined);
        await rm(partial, { force: true });
      },
    };
  }

  read(id: string): Readable {
    return createReadStream(this.#path(id), { highWaterMark: READ_CHUNK_BYTES });
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
