import { MaskSet } from '../exec/masker.ts';
import type { BrokeredCredential } from '../network/brokered.ts';

/** A brokered secret, opened: what the sandbox's egress sets, and the secret's own value. */
export interface OpenedBrokered {
  credential: BrokeredCredential;
  value: string;
}

/**
 * An account's secrets that reach one sandbox, decrypted, as of one version of them
 * (secret_versions: it changes with every write to the account's secrets).
 */
export class OpenedSecrets {
  readonly version: string | null;
  /** Name → value of the ordinary secrets: the account's, then the sandbox's, which win on a name clash. */
  readonly env: Readonly<Record<string, string>>;
  /** What the sandbox's egress sets for the brokered ones: the account's, then the sandbox's. */
  readonly brokered: readonly BrokeredCredential[];
  /**
   * Every value output is masked of, the brokered ones' included: a program never has them, but
   * a server it sends the header to may echo it back.
   */
  readonly values: readonly string[];
  /** What this holds in bytes (values, and the brokered headers' hosts, names and values), as a cache of these counts them. */
  readonly bytes: number;
  #masks: MaskSet | undefined | null = null;

  constructor(version: string | null, env: Record<string, string>, brokered: readonly OpenedBrokered[] = []) {
    this.version = version;
    this.env = env;
    this.brokered = brokered.map((b) => b.credential);
    this.values = [...Object.values(env), ...brokered.map((b) => b.value)];
    const credentialBytes = ({ hosts, header, value }: BrokeredCredential) => hosts.reduce((n, h) => n + h.length, header.length + Buffer.byteLength(value));
    this.bytes = this.values.reduce((n, v) => n + Buffer.byteLength(v), 0) + this.brokered.reduce((n, c) => n + credentialBytes(c), 0);
  }

  /** The masker's automaton of the values, built on first use; undefined when none is masked. */
  get masks(): MaskSet | undefined {
    if (this.#masks === null) this.#masks = MaskSet.of(this.values);
    return this.#masks;
  }
}

export const NO_SECRETS = new OpenedSecrets(null, {});

const BYTES = 1024 * 1024;
const IDLE_MS = 60_000;
const SWEEP_EVERY_MS = 10_000;

/**
 * The secrets this API process opened lately, by account and sandbox: every exec reads its
 * sandbox's secrets, and at the caps (200 a account, 512 KiB) decrypting them and building their
 * masker took milliseconds to tens of them on the event loop, each time. An exec's read sends the
 * version it holds here and gets the ciphertexts only when they changed since, so a change applies
 * to the next exec on every replica.
 *
 * Per account and sandbox, never across them: a tenant whose exec found another's secrets opened
 * would learn, by its speed, that someone holds the values it guessed. Bounded by the values'
 * bytes (least recently used first), and what is unused for a minute is dropped, by a sweep too,
 * so values do not stay in memory past their use by long.
 */
export class OpenedSecretsCache {
  readonly #entries = new Map<string, { opened: OpenedSecrets; usedAt: number }>();
  #bytes = 0;
  #sweep: NodeJS.Timeout | undefined;
  readonly #limitBytes: number;
  readonly #idleMs: number;

  constructor(options: { limitBytes?: number; idleMs?: number } = {}) {
    this.#limitBytes = options.limitBytes ?? BYTES;
    this.#idleMs = options.idleMs ?? IDLE_MS;
  }

  /** What this process holds opened for the sandbox, if it was used lately. */
  get(accountId: string, sandboxId: string): OpenedSecrets | undefined {
    const key = keyOf(accountId, sandboxId);
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    const now = Date.now();
    if (now - entry.usedAt > this.#idleMs) {
      this.#bytes -= entry.opened.bytes;
      return undefined;
    }
    entry.usedAt = now;
    this.#entries.set(key, entry);
    return entry.opened;
  }

  put(accountId: string, sandboxId: string, opened: OpenedSecrets): void {
    const key = keyOf(accountId, sandboxId);
    const old = this.#entries.get(key);
    if (old) {
      this.#entries.delete(key);
      this.#bytes -= old.opened.bytes;
    }
    if (opened.bytes > this.#limitBytes) return;
    const now = Date.now();
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes + opened.bytes <= this.#limitBytes && now - entry.usedAt <= this.#idleMs) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.opened.bytes;
    }
    this.#entries.set(key, { opened, usedAt: now });
    this.#bytes += opened.bytes;
    this.#armSweep();
  }

  /** How many sandboxes' secrets are held, and their bytes. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.#entries.size, bytes: this.#bytes };
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }

  #armSweep(): void {
    if (this.#sweep) return;
    this.#sweep = setInterval(() => {
      const now = Date.now();
      // Oldest use first: the first one still fresh ends the sweep.
      for (const [key, entry] of this.#entries) {
        if (now - entry.usedAt <= this.#idleMs) break;
        this.#entries.delete(key);
        this.#bytes -= entry.opened.bytes;
      }
      if (this.#entries.size === 0) this.clear();
    }, Math.min(SWEEP_EVERY_MS, this.#idleMs));
    this.#sweep.unref();
  }
}

function keyOf(accountId: string, sandboxId: string): string {
  return `${accountId}\n${sandboxId}`;
}
