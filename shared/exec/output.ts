import { SecretMasker } from './masker.ts';

/**
 * One output stream of an exec (stdout or stderr) on its way to the client: secrets masked, cut
 * at a byte cap (then only counted, never buffered), and decoded as UTF-8 across chunk
 * boundaries (invalid bytes become U+FFFD).
 */
export class OutputStream {
  private readonly masker: SecretMasker;
  private readonly decoder = new TextDecoder('utf-8');
  private readonly maxBytes: number;
  private admitted = 0;
  truncated = false;
  /** Bytes the command wrote to this stream, kept or not. */
  received = 0;

  constructor(secrets: Iterable<string>, maxBytes: number) {
    this.masker = new SecretMasker(secrets);
    this.maxBytes = maxBytes;
  }

  /** The text to send for this chunk ('' when held back or past the cap). */
  push(chunk: Uint8Array): string {
    this.received += chunk.byteLength;
    return this.admit(this.masker.push(chunk), true);
  }

  /** How many bytes the masker holds back now (each could still begin a secret). */
  get held(): number {
    return this.masker.held;
  }

  /** A pause: the text held back because it could begin a secret, passed on now. */
  release(): string {
    return this.admit(this.masker.release(), true);
  }

  end(): string {
    return this.admit(this.masker.flush(), false) + this.decoder.decode();
  }

  private admit(bytes: Buffer, more: boolean): string {
    if (bytes.length === 0) return '';
    const room = this.maxBytes - this.admitted;
    if (room <= 0) {
      this.truncated = true;
      return '';
    }
    let slice = bytes;
    if (bytes.length > room) {
      this.truncated = true;
      slice = bytes.subarray(0, utf8Boundary(bytes, room));
    }
    this.admitted += slice.length;
    return this.decoder.decode(slice, { stream: more || !this.truncated });
  }
}

/** The largest cut ≤ n that does not split a UTF-8 sequence. */
function utf8Boundary(bytes: Uint8Array, n: number): number {
  let cut = n;
  while (cut > 0 && cut > n - 4 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return cut;
}
