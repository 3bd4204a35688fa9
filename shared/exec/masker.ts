/**
 * Replaces secret values with *** in a stream of output chunks, also when a value is split
 * across two chunks: the last (longest value − 1) bytes of each chunk are held back until the
 * next chunk (or the end) shows whether they start a secret. Works on bytes, so a multi-byte
 * character split across chunks is never garbled.
 */
export class SecretMasker {
  private readonly secrets: Buffer[];
  private readonly holdBack: number;
  private pending: Buffer = Buffer.alloc(0);
  static readonly MASK = Buffer.from('***');

  constructor(values: Iterable<string>) {
    const unique = [...new Set([...values].filter((v) => v.length > 0))];
    // Longest first, so a value that contains another is masked whole.
    this.secrets = unique.map((v) => Buffer.from(v, 'utf8')).sort((a, b) => b.length - a.length);
    this.holdBack = Math.max(0, ...this.secrets.map((s) => s.length - 1));
  }

  get active(): boolean {
    return this.secrets.length > 0;
  }

  push(chunk: Uint8Array): Buffer {
    if (!this.active) return Buffer.from(chunk);
    const buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : Buffer.from(chunk);
    const { out, rest } = this.replace(buf);
    const keep = Math.min(this.holdBack, rest.length);
    this.pending = Buffer.from(rest.subarray(rest.length - keep));
    return Buffer.concat([...out, rest.subarray(0, rest.length - keep)]);
  }

  /** The end of the stream: what was held back cannot be the start of a secret any more. */
  flush(): Buffer {
    const { out, rest } = this.replace(this.pending);
    this.pending = Buffer.alloc(0);
    return Buffer.concat([...out, rest]);
  }

  private replace(buf: Buffer): { out: Buffer[]; rest: Buffer } {
    const out: Buffer[] = [];
    let from = 0;
    for (;;) {
      let best = -1;
      let bestLength = 0;
      for (const secret of this.secrets) {
        const at = buf.indexOf(secret, from);
        if (at !== -1 && (best === -1 || at < best)) {
          best = at;
          bestLength = secret.length;
        }
      }
      if (best === -1) break;
      out.push(buf.subarray(from, best), SecretMasker.MASK);
      from = best + bestLength;
    }
    return { out, rest: buf.subarray(from) };
  }
}
