/// <reference lib="esnext.disposable" preserve="true" />
// Declared so the emitted declarations carry it: a consumer on an older lib still knows Symbol.asyncDispose.
import type { PaddockClient } from './client.ts';
import { Commands } from './sandbox-commands.ts';
import { clientFrom, type ConnectionOpts } from './sandbox-config.ts';
import { Filesystem } from './sandbox-files.ts';
import { Previews } from './sandbox-previews.ts';
import { Snapshots } from './sandbox-snapshots.ts';
import type { NetworkPolicy, Sandbox as SandboxInfo, SandboxListState } from './types.ts';

/** Options of `Sandbox.create`. */
export interface SandboxOpts extends ConnectionOpts {
  /** The image to start (the account's default when left out). */
  image?: string;
  /** Variables set in every command's environment. */
  env?: Record<string, string>;
  /** Labels of your own, answered back by info() and list(). */
  metadata?: Record<string, string>;
  /** Seconds until the sandbox is destroyed (at most the session cap, the default). */
  timeout?: number;
  /** A ready snapshot (snap_…) whose /workspace the sandbox starts with. */
  snapshot?: string;
  /** Snapshot its /workspace when it is destroyed, by destroy() or at its end: info().finalSnapshotId names it then. */
  snapshotOnDestroy?: boolean;
  /** Where its programs may connect (the deployment's default when omitted): `{ egress: 'none' | 'all' }` or `{ egress: { allow: [...] } }`. */
  network?: NetworkPolicy;
}

// Some Node 20 releases have no Symbol.asyncDispose at run time: the method then sits under the registered symbol.
const asyncDispose: typeof Symbol.asyncDispose = Symbol.asyncDispose ?? (Symbol.for('Symbol.asyncDispose') as typeof Symbol.asyncDispose);

/**
 * A handle on one sandbox: run commands in it (`commands`), read and write its files (`files`),
 * reach the programs it serves (`previews`), keep its workspace past its end (`snapshots`), and end it (`destroy`, or `await using`). Made by Sandbox.create or Sandbox.connect.
 */
export class Sandbox {
  /** The sandbox's id (sbx_…). */
  readonly id: string;
  /** Runs commands in the sandbox. */
  readonly commands: Commands;
  /** The sandbox's files. */
  readonly files: Filesystem;
  /** Its ports reachable from outside, at URLs of their own. */
  readonly previews: Previews;
  /** Copies of its workspace that outlive it. */
  readonly snapshots: Snapshots;
  readonly #client: PaddockClient;

  private constructor(client: PaddockClient, id: string) {
    this.#client = client;
    this.id = id;
    this.commands = new Commands(client, id);
    this.files = new Filesystem(client, id);
    this.previews = new Previews(client, id);
    this.snapshots = new Snapshots(client, id);
  }

  /** Creates a sandbox and answers once it is running (a failed start throws). */
  static async create(opts: SandboxOpts = {}): Promise<Sandbox> {
    const client = clientFrom(opts);
    // An idempotency key lets the client retry a create the API asked to have again (429, 503) without a second sandbox.
    const input = {
      image: opts.image,
      env: opts.env,
      metadata: opts.metadata,
      timeoutSeconds: opts.timeout,
      snapshot: opts.snapshot,
      snapshotOnDestroy: opts.snapshotOnDestroy,
      network: opts.network,
      idempotencyKey: crypto.randomUUID(),
    };
    const created = await client.createSandbox(input);
    return new Sandbox(client, created.id);
  }

  /** A handle on an existing sandbox of the account (an unknown id throws `sandbox_not_found`). */
  static async connect(id: string, opts: ConnectionOpts = {}): Promise<Sandbox> {
    const client = clientFrom(opts);
    await client.getSandbox(id);
    return new Sandbox(client, id);
  }

  /** The account's sandboxes, newest first: the active ones unless `state` says otherwise. */
  static async list(opts: ConnectionOpts & { state?: SandboxListState } = {}): Promise<SandboxInfo[]> {
    const all: SandboxInfo[] = [];
    for await (const s of clientFrom(opts).sandboxes(opts.state ?? 'active')) all.push(s);
    return all;
  }

  /** The sandbox as the API describes it now (status, image, expiresAt, metadata…). */
  info(): Promise<SandboxInfo> {
    return this.#client.getSandbox(this.id);
  }

  /** Ends the sandbox `seconds` from now, earlier or later than before, never past its session cap (`timeout_past_cap`). */
  async setTimeout(seconds: number): Promise<void> {
    await this.#client.setSandboxTimeout(this.id, seconds);
  }

  /**
   * Where its programs may connect from now on: `{ egress: 'none' | 'all' }` or
   * `{ egress: { allow: ['pypi.org:443', '*.githubusercontent.com', '203.0.113.0/24'] } }`.
   */
  async setNetwork(policy: NetworkPolicy): Promise<void> {
    await this.#client.setSandboxNetwork(this.id, policy);
  }

  /** Destroys the sandbox and answers once it is gone; destroying one already gone is success. */
  async destroy(): Promise<void> {
    await this.#client.destroySandbox(this.id);
  }

  /** `await using sbx = await Sandbox.create()` destroys it at the end of the block. */
  async [asyncDispose](): Promise<void> {
    await this.destroy();
  }
}
