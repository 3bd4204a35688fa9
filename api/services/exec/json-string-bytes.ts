// A command's output bytes as the inside of a JSON string, bytes to bytes: what
// `JSON.stringify(new TextDecoder('utf-8').decode(bytes, { stream: true }))` gives between its
// quotes, encoded as UTF-8 (invalid bytes as U+FFFD, one for each maximal subpart, as the
// Encoding Standard's decoder; a byte-order mark at the very start dropped, as TextDecoder drops
// it), without the strings in between. Through strings, a flood of NULs or of random bytes cost
// the web 14 to 40 ms of its event loop per MiB (decode, escape, slice, encode again, and the
// garbage of each); here it is one pass over the bytes into one buffer.

const PLAIN = new Uint8Array(128);
for (let b = 0x20; b < 0x80; b++) PLAIN[b] = b === 0x22 || b === 0x5c ? 0 : 1;
const SHORT = new Uint8Array(128);
for (const [byte, letter] of [[0x08, 'b'], [0x09, 't'], [0x0a, 'n'], [0x0c, 'f'], [0x0d, 'r'], [0x22, '"'], [0x5c, '\\']] as const) SHORT[byte] = letter.charCodeAt(0);
const HEX = Buffer.from('0123456789abcdef', 'latin1');
const BACKSLASH = 0x5c;
const BOM = [0xef, 0xbb, 0xbf];

export class JsonStringBytes {
  /** Continuation bytes the open sequence still needs, and those it has (its lead in seq[0]). */
  private needed = 0;
  private seen = 0;
  private lower = 0x80;
  private upper = 0xbf;
  private readonly seq = new Uint8Array(4);
  /** The first bytes while they are the start of a byte-order mark, which is dropped. */
  private head: number[] | undefined = [];

  /** The room encodeInto needs for `length` bytes: every byte a control character (six), plus what was held let go. */
  static room(length: number): number {
    return length * 6 + 24;
  }

  /**
   * The JSON-escaped UTF-8 of `bytes`, continuing a character the previous call left open, written
   * into `out` from `at` (with at least room(bytes.length) bytes from there); answers where the
   * writing ended: the bytes written when `at` is 0.
   */
  encodeInto(bytes: Uint8Array, out: Buffer, at = 0): number {
    let w = at;
    if (this.head) {
      // Held only while they may still be the mark, as a decoder holds a character's start.
      const head = this.head;
      while (bytes.length > 0 && head.length < 3 && bytes[0] === BOM[head.length]) {
        head.push(bytes[0]!);
        bytes = bytes.subarray(1);
      }
      if (head.length === 3) this.head = undefined;
      else if (bytes.length === 0) return at;
      else w = this.letHeadGo(out, at);
    }
    return this.run(bytes, out, w);
  }

  /** The end of the output: a character left open is one U+FFFD (between `around`'s head and tail when given; empty when nothing was). */
  end(around?: Around): Buffer {
    const out = Buffer.allocUnsafe(3 * 6 + 3);
    let w = this.head ? this.letHeadGo(out, 0) : 0;
    if (this.needed !== 0) w = replacement(out, w);
    this.needed = 0;
    this.lower = 0x80;
    this.upper = 0xbf;
    return framed(out, w, around);
  }

  private letHeadGo(out: Buffer, at: number): number {
    const head = this.head!;
    this.head = undefined;
    return this.run(Uint8Array.from(head), out, at);
  }

  private run(bytes: Uint8Array, out: Buffer, w: number): number {
    const seq = this.seq;
    let { needed, seen, lower, upper } = this;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      if (needed === 0) {
        if (b < 0x80) {
          if (PLAIN[b] === 1) {
            // A run of plain bytes goes as it is, in one copy when it is long.
            let j = i + 1;
            while (j < bytes.length && PLAIN[bytes[j]!] === 1) j++;
            if (j - i > 16) out.set(bytes.subarray(i, j), w);
            else for (let k = i; k < j; k++) out[w + k - i] = bytes[k]!;
            w += j - i;
            i = j - 1;
            continue;
          }
          const from = w;
          if (SHORT[b] !== 0) {
            out[w++] = BACKSLASH;
            out[w++] = SHORT[b]!;
          } else {
            out[w++] = BACKSLASH;
            out[w++] = 0x75; // u
            out[w++] = 0x30;
            out[w++] = 0x30;
            out[w++] = HEX[b >> 4]!;
            out[w++] = HEX[b & 15]!;
          }
          // A run of the same byte (a flood of NULs): its escape repeated by doubling copies.
          let j = i + 1;
          while (j < bytes.length && bytes[j] === b) j++;
          if (j - i > 1) {
            const size = w - from;
            const end = from + size * (j - i);
            while (w < end) {
              const copy = Math.min(w - from, end - w);
              out.copyWithin(w, from, from + copy);
              w += copy;
            }
            i = j - 1;
          }
          continue;
        }
        if (b >= 0xc2 && b <= 0xdf) needed = 1;
        else if (b >= 0xe0 && b <= 0xef) {
          needed = 2;
          if (b === 0xe0) lower = 0xa0;
          else if (b === 0xed) upper = 0x9f;
        } else if (b >= 0xf0 && b <= 0xf4) {
          needed = 3;
          if (b === 0xf0) lower = 0x90;
          else if (b === 0xf4) upper = 0x8f;
        } else {
          w = replacement(out, w);
          continue;
        }
        seq[0] = b;
        seen = 0;
        continue;
      }
      if (b < lower || b > upper) {
        // The sequence so far is one U+FFFD, and this byte starts afresh.
        needed = 0;
        lower = 0x80;
        upper = 0xbf;
        w = replacement(out, w);
        i--;
        continue;
      }
      lower = 0x80;
      upper = 0xbf;
      seq[++seen] = b;
      if (seen === needed) {
        for (let k = 0; k <= seen; k++) out[w++] = seq[k]!;
        needed = 0;
      }
    }
    this.needed = needed;
    this.seen = seen;
    this.lower = lower;
    this.upper = upper;
    return w;
  }
}

/** What an encoded piece goes between: an NDJSON line's start and end, say. */
export interface Around {
  head: Uint8Array;
  tail: Uint8Array;
}

const EMPTY = Buffer.alloc(0);

/**
 * The first `n` bytes of `out` in a buffer the size of what was written (a slice of text must not
 * hold six times its size while it waits in a slow client's queue), between `around`'s head and
 * tail when given; empty when nothing was written.
 */
function framed(out: Buffer, n: number, around: Around | undefined): Buffer {
  if (n === 0) return EMPTY;
  if (!around) return Buffer.from(out.subarray(0, n));
  const piece = Buffer.allocUnsafe(around.head.length + n + around.tail.length);
  piece.set(around.head, 0);
  out.copy(piece, around.head.length, 0, n);
  piece.set(around.tail, around.head.length + n);
  return piece;
}

function replacement(out: Buffer, w: number): number {
  out[w] = 0xef;
  out[w + 1] = 0xbf;
  out[w + 2] = 0xbd;
  return w + 3;
}
