// What a script of the snapshots' says, kept for a failure's message: bounded, whatever it says.

/** Of what a script says on stderr, this much is kept for a failure's message. */
export const STDERR_KEPT_BYTES = 4096;

const TAIL_BYTES = 256;

/** The first bytes of a stream, and its last, as text. */
export class BoundedText {
  readonly #max: number;
  #chunks: Buffer[] = [];
  #kept = 0;
  #tail = Buffer.alloc(0);

  constructor(max: number) {
    this.#max = max;
  }

  push(chunk: Uint8Array): void {
    const bytes = Buffer.from(chunk);
    this.#tail = Buffer.concat([this.#tail, bytes]).subarray(-TAIL_BYTES);
    if (this.#kept >= this.#max) return;
    const piece = bytes.subarray(0, this.#max - this.#kept);
    this.#chunks.push(piece);
    this.#kept += piece.byteLength;
  }

  text(): string {
    return Buffer.concat(this.#chunks).toString('utf8');
  }

  tail(): string {
    return this.#tail.toString('utf8');
  }
}
