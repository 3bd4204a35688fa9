import { ApiError } from '../../shared/errors.ts';

/** Deeper than any body of the contract nests, by far. */
export const MAX_JSON_DEPTH = 32;
/** Objects, arrays and members together: far more than any body of the contract has. */
export const MAX_JSON_NODES = 20_000;
/** Longest top-level member name kept to name in an error (the contract's are short). */
const MAX_KEY_BYTES = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/**
 * Watches a JSON body's shape chunk by chunk, as it arrives, so that a body nested too deep or
 * made of too many parts is refused before JSON.parse and the schema walk ever see it: their cost
 * grows with those, and they run on the event loop in one piece. The scan itself is a byte loop,
 * a few microseconds per chunk. It does not validate JSON (JSON.parse does); it counts, and keeps
 * the top-level member it is in, so the refusal names the field as the schema's would.
 */
export interface ShapeOptions {
  /** A top-level member allowed the whole body limit (exec's stdin, a file's content)... */
  largeField?: string;
  /** ...while everything else together stays within this many bytes. */
  otherLimitBytes?: number;
}

export class JsonShapeGuard {
  private readonly largeField: string | undefined;
  private readonly otherLimitBytes: number;
  private otherBytes = 0;
  private depth = 0;
  private nodes = 0;
  private inString = false;
  private escaped = false;
  private topIsObject: boolean | undefined;
  private expectKey = false;
  private keyBytes: number[] | undefined;
  private field: string | null = null;

  constructor(options: ShapeOptions = {}) {
    this.largeField = options.largeField;
    this.otherLimitBytes = options.largeField ? (options.otherLimitBytes ?? Infinity) : Infinity;
  }

  push(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      // A large field's own key is counted with the rest until it is read: a few bytes.
      if (this.field !== this.largeField && ++this.otherBytes > this.otherLimitBytes) this.refuseSize();
      if (this.inString) {
        if (this.keyBytes && this.keyBytes.length < MAX_KEY_BYTES) this.keyBytes.push(byte);
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.endString();
        continue;
      }
      if (byte === QUOTE) {
        this.inString = true;
        if (this.depth === 1 && this.topIsObject && this.expectKey) this.keyBytes = [QUOTE];
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        this.topIsObject ??= byte === OPEN_OBJECT;
        if (++this.depth > MAX_JSON_DEPTH) this.refuse(`nests deeper than ${MAX_JSON_DEPTH} levels`);
        if (this.depth === 1) this.expectKey = true;
        this.count();
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) this.depth--;
      else if (byte === COMMA) {
        if (this.depth === 1) {
          this.expectKey = true;
          // The member is over: bytes from here on (the next key first) are not its own.
          this.field = null;
        }
        this.count();
      }
    }
  }

  private endString(): void {
    this.inString = false;
    if (!this.keyBytes) return;
    try {
      const key: unknown = JSON.parse(Buffer.from(this.keyBytes).toString('utf8'));
      this.field = typeof key === 'string' ? key : null;
    } catch {
      this.field = null; // cut at MAX_KEY_BYTES: too long to name
    }
    this.keyBytes = undefined;
    this.expectKey = false;
  }

  private count(): void {
    if (++this.nodes > MAX_JSON_NODES) this.refuse(`holds more than ${MAX_JSON_NODES} values`);
  }

  private refuseSize(): never {
    throw new ApiError(
      'payload_too_large',
      `The request body's members other than ${this.largeField} are larger than ${this.otherLimitBytes} bytes together.`,
      { extra: { limitBytes: this.otherLimitBytes } },
    );
  }

  private refuse(what: string): never {
    const field = this.topIsObject && this.depth >= 1 ? this.field : null;
    const message = `the value ${what}`;
    throw new ApiError('invalid_request', `body${field ? `.${field}` : ''}: ${message}`, {
      extra: { errors: [{ location: 'body', field, message }] },
    });
  }
}
