/**
 * The shortest value masked, and so the shortest secret POST /v1/secrets accepts: masking a one-
 * or two-character value would turn every occurrence of those characters in the output into ***.
 * (A shorter value stored before the rule is still injected, unmasked.)
 */
export const MASK_MIN_BYTES = 4;

/**
 * Replaces secret values with *** in a stream of output chunks, also when a value is split
 * across chunks. One pass over the bytes whatever the number of secrets (an Aho-Corasick
 * automaton over their bytes), and only the bytes that could still begin a secret are held back
 * until the next chunk (or the end) decides them. Every byte inside an occurrence of any secret
 * is masked; overlapping occurrences become one ***, each of several back to back its own. Works on bytes, so a multi-byte
 * character split across chunks is never garbled.
 */
export class SecretMasker {
  static readonly MASK = Buffer.from('***');
  private readonly automaton: Automaton | undefined;
  private state = 0;
  /** Bytes not yet passed on: they could still be part of a secret. */
  private pending: Buffer = Buffer.alloc(0);
  /** Masked spans within `pending`, as [start, end) offsets, sorted and disjoint. */
  private spans: [number, number][] = [];

  /**
   * The values to mask, or a MaskSet of them built before: every masker of an exec's secrets
   * (its stdout's and its stderr's, and the next exec's while they are unchanged) shares one.
   */
  constructor(values: Iterable<string> | MaskSet | undefined) {
    this.automaton = values instanceof MaskSet ? values.automaton : values === undefined ? undefined : MaskSet.of(values)?.automaton;
  }

  get active(): boolean {
    return this.automaton !== undefined;
  }

  /** How many bytes are held back now (each could still start a secret). */
  get held(): number {
    return this.pending.length;
  }

  push(chunk: Uint8Array): Buffer {
    const automaton = this.automaton;
    // Nothing to mask: the chunk itself, not a copy (the runtime's chunks are fresh from a read).
    if (!automaton) return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const base = this.pending.length;
    const buf = base ? Buffer.concat([this.pending, chunk]) : Buffer.from(chunk);
    let state = this.state;
    const starts = automaton.starts;
    for (let i = 0; i < chunk.length; i++) {
      // At the root, a byte that begins no secret leaves it there: such runs (most output) are
      // skipped with one table read a byte instead of the automaton's step.
      if (state === 0) {
        while (i < chunk.length && starts[chunk[i]!] === 0) i++;
        if (i === chunk.length) break;
      }
      state = automaton.step(state, chunk[i]!);
      const length = automaton.matchLength[state]!;
      if (length > 0) this.mark(base + i + 1 - length, base + i + 1);
    }
    this.state = state;
    // Bytes before the longest live prefix of a secret can no longer begin one.
    // (After a release the live prefix may be longer than what is held: then all of it is held.)
    let boundary = Math.max(0, buf.length - automaton.depth[state]!);
    // A masked span the boundary cuts is held whole, so it is masked once.
    for (const [start, end] of this.spans) if (start < boundary && boundary < end) boundary = start;
    return this.emit(buf, boundary);
  }

  /** The end of the stream: what was held back is passed on, masked as it stands. */
  flush(): Buffer {
    const out = this.emit(this.pending, this.pending.length);
    this.state = 0;
    return out;
  }

  /**
   * A pause in the stream: what was held back is passed on, as at the end, so a reader is never
   * kept waiting for bytes that only might begin a secret. The automaton keeps its place: when
   * the output goes on to finish a secret whose first bytes were released, the rest of it is
   * still masked (the released part cannot be taken back).
   */
  release(): Buffer {
    return this.emit(this.pending, this.pending.length);
  }

  private mark(start: number, end: number): void {
    // Matches are found in order of their ends; a longer one may start before earlier spans, or
    // (after a release) before the bytes still held: what is left of it is masked.
    let s = Math.max(0, start);
    let e = end;
    // Overlapping occurrences are one span; adjacent ones stay two (***  ***), whatever the chunking.
    while (this.spans.length > 0 && this.spans.at(-1)![1] > s) {
      const [ps, pe] = this.spans.pop()!;
      s = Math.min(s, ps);
      e = Math.max(e, pe);
    }
    this.spans.push([s, e]);
  }

  private emit(buf: Buffer, boundary: number): Buffer {
    const parts: Buffer[] = [];
    let from = 0;
    const kept: [number, number][] = [];
    for (const [start, end] of this.spans) {
      if (end <= boundary) {
        parts.push(buf.subarray(from, start), SecretMasker.MASK);
        from = end;
      } else kept.push([start - boundary, end - boundary]);
    }
    parts.push(buf.subarray(from, boundary));
    this.spans = kept;
    this.pending = Buffer.from(buf.subarray(boundary));
    return parts.length === 1 ? Buffer.from(parts[0]!) : Buffer.concat(parts);
  }
}

/**
 * Secrets built into the automaton that masks them: a build is tens of milliseconds at the
 * secret caps, so it is made once for a set of secrets and shared by the maskers of it.
 */
export class MaskSet {
  readonly automaton: Automaton;

  private constructor(secrets: Buffer[]) {
    this.automaton = new Automaton(secrets);
  }

  /** Undefined when no value is long enough to be masked. */
  static of(values: Iterable<string>): MaskSet | undefined {
    const secrets = [...new Set(values)].map((v) => Buffer.from(v, 'utf8')).filter((b) => b.length >= MASK_MIN_BYTES);
    return secrets.length === 0 ? undefined : new MaskSet(secrets);
  }
}

/** No child: the root is no state's child. */
const NONE = 0;

/**
 * The Aho-Corasick automaton of a set of byte strings: a trie whose states are the prefixes of
 * the secrets, with failure links. A step follows failure links until a child matches, which
 * is constant time amortised over the stream (each byte deepens the state by at most one).
 *
 * Flat typed arrays, sized once from the secrets' bytes (a state per byte at most): an account
 * may hold half a megabyte of secrets, built into a masker at every exec on the API's event
 * loop. With a Map of children per state that was 260 ms and 140 MB a build; here a state with one
 * child (nearly every state of a long secret) keeps it in two array slots, and only a state with
 * several has a table of its own.
 */
class Automaton {
  /** Per state: its one child's byte (-1: none, or several, kept in `branches`). */
  private readonly onlyByte: Int16Array;
  private readonly onlyChild: Int32Array;
  /**
   * Per state with several children: 1 + the index of its table of children in `branches`; 0 for
   * none. A table has a slot per byte (0: no child, as no child is the root): each secret makes at
   * most one state branch, so there are few, and a lookup in one is an array read.
   */
  private readonly branchOf: Int32Array;
  private readonly branches: Int32Array[] = [];
  private readonly fail: Int32Array;
  /** Per state: the length of the prefix it stands for. */
  readonly depth: Int32Array;
  /** Per state: the longest secret that ends here (itself or through failure links), 0 for none. */
  readonly matchLength: Int32Array;
  /** Per byte: 1 if some secret begins with it (the root has a child for it). */
  readonly starts = new Uint8Array(256);
  private states = 1;

  constructor(patterns: Buffer[]) {
    const most = 1 + patterns.reduce((n, p) => n + p.length, 0);
    this.onlyByte = new Int16Array(most).fill(-1);
    this.onlyChild = new Int32Array(most);
    this.branchOf = new Int32Array(most);
    this.fail = new Int32Array(most);
    this.depth = new Int32Array(most);
    this.matchLength = new Int32Array(most);
    for (const pattern of patterns) {
      let state = 0;
      for (let i = 0; i < pattern.length; i++) {
        const byte = pattern[i]!;
        let child = this.child(state, byte);
        if (child === NONE) {
          child = this.states++;
          this.depth[child] = this.depth[state]! + 1;
          this.addChild(state, byte, child);
        }
        state = child;
      }
      this.matchLength[state] = Math.max(this.matchLength[state]!, pattern.length);
    }
    // Breadth first, so a state's failure target is done before the state.
    const queue = new Int32Array(this.states);
    let tail = 0;
    for (let byte = 0; byte < 256; byte++) {
      const child = this.child(0, byte);
      if (child === NONE) continue;
      this.starts[byte] = 1;
      queue[tail++] = child;
    }
    for (let head = 0; head < tail; head++) {
      const state = queue[head]!;
      const branch = this.branchOf[state]!;
      if (branch === 0) {
        if (this.onlyByte[state] !== -1) queue[tail++] = this.link(state, this.onlyByte[state]!, this.onlyChild[state]!);
      } else {
        const table = this.branches[branch - 1]!;
        for (let byte = 0; byte < 256; byte++) if (table[byte] !== 0) queue[tail++] = this.link(state, byte, table[byte]!);
      }
    }
  }

  step(state: number, byte: number): number {
    for (let s = state; ; s = this.fail[s]!) {
      const child = this.child(s, byte);
      if (child !== NONE) return child;
      if (s === 0) return 0;
    }
  }

  /** Sets the failure link of `child` (reached from `state` by `byte`); answers the child. */
  private link(state: number, byte: number, child: number): number {
    let f = this.fail[state]!;
    while (f !== 0 && this.child(f, byte) === NONE) f = this.fail[f]!;
    const target = this.child(f, byte);
    const fail = target !== NONE && target !== child ? target : 0;
    this.fail[child] = fail;
    this.matchLength[child] = Math.max(this.matchLength[child]!, this.matchLength[fail]!);
    return child;
  }

  private child(state: number, byte: number): number {
    if (this.onlyByte[state] === byte) return this.onlyChild[state]!;
    const branch = this.branchOf[state]!;
    if (branch === 0) return NONE;
    const child = this.branches[branch - 1]![byte]!;
    return child === 0 ? NONE : child;
  }

  private addChild(state: number, byte: number, child: number): void {
    const branch = this.branchOf[state]!;
    if (branch !== 0) {
      this.branches[branch - 1]![byte] = child;
    } else if (this.onlyByte[state] === -1) {
      this.onlyByte[state] = byte;
      this.onlyChild[state] = child;
    } else {
      const table = new Int32Array(256);
      table[this.onlyByte[state]!] = this.onlyChild[state]!;
      table[byte] = child;
      this.branchOf[state] = this.branches.push(table);
      this.onlyByte[state] = -1;
    }
  }
}
