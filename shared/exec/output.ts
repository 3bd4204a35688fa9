import { SecretMasker, type MaskSet } from './masker.ts';

/**
 * One output stream of an exec (stdout or stderr) on its way to the client: secrets masked and
 * cut at a byte cap (then only counted, never buffered), at a UTF-8 boundary. It gives bytes:
 * whoever sends them decodes them (TextDecoder, invalid bytes as U+FFFD) only as they go out, so
 * output held for a buffered answer is bytes outside the JavaScript heap, not strings in it.
 */
export class OutputStream {
  private readonly masker: SecretMasker;
  private readonly maxBytes: number;
  private admitted = 0;
  truncated = false;
  /** Bytes the command wrote to this stream, kept or not. */
  received = 0;

  /** `masks`: the secrets to mask, built (SecretMasker). */
  constructor(masks: MaskSet | undefined, maxBytes: number) {
    this.masker = new SecretMasker(masks);
    this.maxBytes = maxBytes;
  }

  /** The bytes to send for this chunk (none when held back or past the cap). */
  push(chunk: Uint8Array): Buffer {
    this.received += chunk.byteLength;
    return this.admit(this.masker.push(chunk));
  }

  /** How many bytes the masker holds back now (each could still begin a secret). */
  get held(): number {
    return this.masker.held;
  }

  /** A pause: the bytes held back because they could begin a secret, passed on now. */
  release(): Buffer {
    return this.admit(this.masker.release());
  }

  end(): Buffer {
    return this.admit(this.masker.flush());
  }

  private admit(bytes: Buffer): Buffer {
    if (bytes.length === 0) return bytes;
    const room = this.maxBytes - this.admitted;
    if (room <= 0) {
      this.truncated = true;
      return EMPTY;
    }
    let slice = bytes;
    if (bytes.length > room) {
      this.truncated = true;
      slice = bytes.subarray(0, utf8Boundary(bytes, room));
    }
    this.admitted += slice.length;
    return slice;
  }
}

const EMPTY = Buffer.alloc(0);

/** The largest cut ≤ n that does not split a UTF-8 sequence. */
function utf8Boundary(bytes: Uint8Array, n: number): number {
  let cut = n;
  while (cut > 0 && cut > n - 4 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return cut;
}
