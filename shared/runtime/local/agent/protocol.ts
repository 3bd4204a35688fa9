import { ENV_NAME, RESERVED_ENV_PREFIX } from '../../../exec/env-names.ts';
import type { Frame } from '../../exec-frame.ts';

// The frames between the runtime and a sandbox's agent (paddock-agent.c says what each means):
// [type: 1 byte][length: u32 little-endian][payload].

export const HEADER_BYTES = 5;
/** The largest stdin frame the agent takes; output frames are at most this too. */
export const CHUNK_BYTES = 64 * 1024;

export type AgentFrameType = 'P' | 'O' | 'E' | 'C' | 'X' | 'F' | 'T' | 'K';

export interface AgentFrame {
  type: string;
  payload: Buffer;
}

/**
 * What the runtime sends: a command's request, go, stdin and its end; a move of the sandbox's
 * deadline; or a port to connect to.
 */
export type RuntimeFrameType = 'R' | 'G' | 'I' | 'D' | 'T' | 'N';

export function frameHeader(type: RuntimeFrameType, length: number): Buffer {
  const head = Buffer.allocUnsafe(HEADER_BYTES);
  head[0] = type.charCodeAt(0);
  head.writeUInt32LE(length, 1);
  return head;
}

export function frame(type: RuntimeFrameType, payload?: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(HEADER_BYTES + (payload?.byteLength ?? 0));
  out[0] = type.charCodeAt(0);
  out.writeUInt32LE(payload?.byteLength ?? 0, 1);
  if (payload) out.set(payload, HEADER_BYTES);
  return out;
}

/**
 * The request frame: argv, the environment and the working directory, each item its own length,
 * so nothing in them is ever parsed as anything else. The same rules as the nsenter path's frame.
 */
export function requestFrame(request: Frame, group?: string): Buffer {
  if (request.argv.length === 0) throw new TypeError('argv must name a program');
  const items: Buffer[] = [];
  const item = (kind: string, value: string): void => {
    if (value.includes('\0')) throw new TypeError('arguments, the working directory and environment values cannot contain NUL');
    const bytes = Buffer.from(value, 'utf8');
    const head = Buffer.allocUnsafe(HEADER_BYTES);
    head[0] = kind.charCodeAt(0);
    head.writeUInt32LE(bytes.byteLength, 1);
    items.push(head, bytes);
  };
  for (const [name, value] of Object.entries(request.env)) {
    if (!ENV_NAME.test(name)) throw new TypeError(`not an environment variable name: ${JSON.stringify(name)}`);
    if (name.startsWith(RESERVED_ENV_PREFIX)) throw new TypeError(`environment variable names starting with ${RESERVED_ENV_PREFIX} are reserved`);
    item('e', `${name}=${value}`);
  }
  item('c', request.cwd);
  if (group !== undefined) item('g', group);
  for (const arg of request.argv) item('a', arg);
  return frame('R', Buffer.concat(items));
}

/** A port request: the connection carries that port's bytes once the agent answers 'K'. */
export function portFrame(port: number): Buffer {
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new RangeError(`not a port: ${port}`);
  const payload = Buffer.allocUnsafe(2);
  payload.writeUInt16LE(port, 0);
  return frame('N', payload);
}

/**
 * Frames out of a byte stream. It holds only what was pushed and not yet taken: the caller stops
 * pushing (pauses its socket) while it is not taking. An output frame ('O', 'E') is given as its
 * bytes come, in pieces of the chunks they came in (several frames of the same type may follow
 * one another; the reader does not care where one ended): a frame that straddles two reads is
 * never copied whole. Every other frame comes whole.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** An output frame being given in pieces: its type and the payload bytes still to come. */
  private partial: { type: string; left: number } | undefined;

  push(chunk: Buffer): void {
    if (chunk.byteLength === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.byteLength;
  }

  /** The next frame (or piece of an output frame), or undefined until more bytes come. */
  next(): AgentFrame | undefined {
    for (;;) {
      if (this.partial) {
        if (this.buffered === 0) return undefined;
        const first = this.chunks[0]!;
        const bytes = Math.min(this.partial.left, first.byteLength);
        const payload = first.subarray(0, bytes);
        this.take(bytes);
        const type = this.partial.type;
        this.partial.left -= bytes;
        if (this.partial.left === 0) this.partial = undefined;
        return { type, payload };
      }
      if (this.buffered < HEADER_BYTES) return undefined;
      const first = this.chunks[0]!;
      const head = first.byteLength >= HEADER_BYTES ? first : Buffer.concat(this.chunks, HEADER_BYTES);
      const length = head.readUInt32LE(1);
      const type = String.fromCharCode(head[0]!);
      if ((type === 'O' || type === 'E') && length > 0) {
        this.take(HEADER_BYTES);
        this.partial = { type, left: length };
        continue;
      }
      if (this.buffered < HEADER_BYTES + length) return undefined;
      if (first.byteLength >= HEADER_BYTES + length) {
        const payload = first.subarray(HEADER_BYTES, HEADER_BYTES + length);
        this.take(HEADER_BYTES + length);
        return { type, payload };
      }
      const whole = Buffer.concat(this.chunks, HEADER_BYTES + length);
      this.take(HEADER_BYTES + length);
      return { type, payload: whole.subarray(HEADER_BYTES) };
    }
  }

  private take(bytes: number): void {
    this.buffered -= bytes;
    while (bytes > 0) {
      const first = this.chunks[0]!;
      if (first.byteLength <= bytes) {
        this.chunks.shift();
        bytes -= first.byteLength;
      } else {
        this.chunks[0] = first.subarray(bytes);
        bytes = 0;
      }
    }
  }
}
