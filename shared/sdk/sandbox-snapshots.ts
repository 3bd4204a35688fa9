import type { PaddockClient } from './client.ts';
import type { Snapshot } from './types.ts';

/** A sandbox's snapshots: copies of its /workspace that outlive it (`Sandbox.create({ snapshot })` starts from one). */
export class Snapshots {
  readonly #client: PaddockClient;
  readonly #id: string;

  constructor(client: PaddockClient, id: string) {
    this.#client = client;
    this.#id = id;
  }

  /** Copies the workspace as it is now; answers the snapshot once it is ready (`wait: false`: at once, pending). */
  create(opts: { name?: string; wait?: boolean } = {}): Promise<Snapshot> {
    return this.#client.createSnapshot(this.#id, opts.name === undefined ? {} : { name: opts.name }, { wait: opts.wait });
  }

  /** The account's snapshots taken of this sandbox, newest first. */
  async list(): Promise<Snapshot[]> {
    const mine: Snapshot[] = [];
    for await (const s of this.#client.snapshots()) if (s.sandboxId === this.#id) mine.push(s);
    return mine;
  }
}
