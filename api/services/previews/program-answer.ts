import type { Duplex } from 'node:stream';

// A program's HTTP/1.1 answer read off its connection as bytes, with no HTTP client between: the
// head parsed and checked here, then the body's bytes handed on as they arrive, de-framed (a
// Content-Length counted, chunks unwrapped), each chunk the very buffer the socket read. Bulk
// answers cost the proxy a read and a write a chunk, not a parser's events and a stream's.

/** Node's own cap on a message's head (--max-http-header-size's default). */
const MAX_HEAD_BYTES = 16 * 1024;
/** A chunk-size line (with its extensions) and a chunked body's trailers, at most. */
const MAX_LINE_BYTES = 4096;
const MAX_TRAILER_BYTES = 16 * 1024;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export interface AnswerHead {
  status: number;
  /** The reason phrase, when it is one HTTP can carry on. */
  reason: string | undefined;
  /** The header fields as sent, names lowercased: [name, value, name, value, ...], duplicates kept. */
  fields: string[];
  /** The body's length when the program framed it by Content-Length (undefined: chunked, or up to the close). */
  length: number | undefined;
}

export interface AnswerSink {
  /** The head, once whole. Returns whether it was taken: false drops the answer (nothing more is called). */
  head(head: AnswerHead): boolean;
  /** A piece of the body. Returns false to be paused until `resume()`. */
  data(chunk: Buffer): boolean;
  /** The body is whole. */
  end(): void;
  /** Not valid HTTP ('invalid'), or the connection ended before the answer did ('closed'). */
  fail(why: 'invalid' | 'closed'): void;
}

export class NotValidHttp extends Error {
  override name = 'NotValidHttp';
}

type Phase = 'head' | 'length' | 'size' | 'data' | 'data-end' | 'trailers' | 'close' | 'done';

/**
 * Reads the answer to one request (`method`, for HEAD's bodiless answers) off `upstream` into
 * `sink`; 1xx answers before it are skipped. Returns how to resume a paused body, and `take`,
 * which the bytes go to: from upstream's 'data' events, unless they are `fed` to it (the
 * stream's PortReads). Nothing of a chunk is kept past `take` but what `sink.data` is given of it.
 */
export function readProgramAnswer(upstream: Duplex, method: string, sink: AnswerSink, options: { fed?: boolean } = {}): { resume(): void; take(chunk: Buffer): void } {
  let phase: Phase = 'head';
  let pending: Buffer | undefined;
  let left = 0;
  let trailerBytes = 0;
  let paused = false;

  /** The answer is over, whole or not: nothing more is read for it. */
  const detach = (): void => {
    phase = 'done';
    if (!options.fed) upstream.off('data', onData);
    upstream.off('end', onEnd);
    upstream.off('close', onEnd);
  };
  const finish = (): void => {
    detach();
    sink.end();
  };
  const failed = (why: 'invalid' | 'closed'): void => {
    if (phase === 'done') return;
    detach();
    sink.fail(why);
  };
  const give = (chunk: Buffer): void => {
    if (chunk.byteLength === 0) return;
    if (!sink.data(chunk) && !paused) {
      paused = true;
      upstream.pause();
    }
  };

  function onData(chunk: Buffer): void {
    try {
      take(chunk);
    } catch (err) {
      if (!(err instanceof NotValidHttp)) throw err;
      failed('invalid');
    }
  }

  function onEnd(): void {
    if (phase === 'close') return finish();
    failed('closed');
  }

  /** What the head says of the body that follows, or the answer done after it. */
  function afterHead(head: AnswerHead, rest: Buffer): void {
    const bodiless = method === 'HEAD' || head.status === 204 || head.status === 304;
    const coding = lastValue(head.fields, 'transfer-encoding');
    if (!sink.head(head)) return detach();
    if (bodiless) return finish();
    if (coding !== undefined) {
      phase = /(?:^|,)\s*chunked\s*$/i.test(coding) ? 'size' : 'close';
    } else if (head.length !== undefined) {
      left = head.length;
      phase = 'length';
      if (left === 0) return finish();
    } else {
      phase = 'close';
    }
    if (rest.byteLength) take(rest);
  }

  function take(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.byteLength && phase !== 'done') {
      switch (phase) {
        case 'head': {
          const buffered = pending ? Buffer.concat([pending, chunk.subarray(at)]) : chunk.subarray(at);
          const end = headEnd(buffered);
          if (end === -1) {
            if (buffered.byteLength > MAX_HEAD_BYTES) throw new NotValidHttp('the head is too large');
            // A copy: the chunk's memory may serve another read once this returns.
            pending = pending ? buffered : Buffer.from(buffered);
            return;
          }
          if (end > MAX_HEAD_BYTES) throw new NotValidHttp('the head is too large');
          pending = undefined;
          const head = parseHead(buffered.subarray(0, end).toString('latin1'));
          const rest = buffered.subarray(end);
          // An interim answer (100 Continue, 103 Early Hints): the final one follows.
          if (head.status >= 100 && head.status < 200) {
            if (head.status === 101) throw new NotValidHttp('a switch of protocols answers no plain request');
            chunk = rest;
            at = 0;
            continue;
          }
          return afterHead(head, rest);
        }
        case 'length': {
          const piece = chunk.subarray(at, at + left);
          at += piece.byteLength;
          left -= piece.byteLength;
          give(piece);
          // Bytes past the length are not the answer's: the connection is done with.
          if (left === 0) return finish();
          break;
        }
        case 'close':
          give(at === 0 ? chunk : chunk.subarray(at));
          return;
        case 'size': {
          const line = readLine(chunk, at, MAX_LINE_BYTES);
          if (!line) return;
          at = line.next;
          const size = line.text.split(';', 1)[0]!.trim();
          if (!/^[0-9a-fA-F]{1,12}$/.test(size)) throw new NotValidHttp('a chunk size is not hexadecimal');
          left = parseInt(size, 16);
          phase = left === 0 ? 'trailers' : 'data';
          break;
        }
        case 'data': {
          const piece = chunk.subarray(at, at + left);
          at += piece.byteLength;
          left -= piece.byteLength;
          give(piece);
          if (left === 0) phase = 'data-end';
          break;
        }
        case 'data-end': {
          const line = readLine(chunk, at, 2);
          if (!line) return;
          if (line.text !== '') throw new NotValidHttp('a chunk does not end with CRLF');
          at = line.next;
          phase = 'size';
          break;
        }
        case 'trailers': {
          const line = readLine(chunk, at, MAX_LINE_BYTES);
          if (!line) return;
          trailerBytes += line.next - at;
          at = line.next;
          if (trailerBytes > MAX_TRAILER_BYTES) throw new NotValidHttp('the trailers are too large');
          // Trailers are not passed on (the client's answer is framed anew); the empty line ends the body.
          if (line.text === '') return finish();
          break;
        }
      }
    }
  }

  /** A line from `at` (up to LF, CR dropped), joining what a previous chunk left; undefined until whole. */
  function readLine(chunk: Buffer, at: number, max: number): { text: string; next: number } | undefined {
    const lf = chunk.indexOf(0x0a, at);
    const from = pending ? Buffer.concat([pending, chunk.subarray(at, lf === -1 ? undefined : lf)]) : chunk.subarray(at, lf === -1 ? undefined : lf);
    if (from.byteLength > max + 1) throw new NotValidHttp('a line is too long');
    if (lf === -1) {
      pending = Buffer.from(from);
      return undefined;
    }
    pending = undefined;
    const text = from.toString('latin1');
    return { text: text.endsWith('\r') ? text.slice(0, -1) : text, next: lf + 1 };
  }

  if (!options.fed) upstream.on('data', onData);
  upstream.once('end', onEnd);
  upstream.once('close', onEnd);
  return {
    take: onData,
    resume() {
      if (!paused || phase === 'done') return;
      paused = false;
      upstream.resume();
    },
  };
}

/** Where the head ends (past its empty line), or -1. Lines may end with LF alone. */
function headEnd(bytes: Buffer): number {
  for (let i = bytes.indexOf(0x0a); i !== -1; i = bytes.indexOf(0x0a, i + 1)) {
    if (bytes[i + 1] === 0x0a) return i + 2;
    if (bytes[i + 1] === 0x0d && bytes[i + 2] === 0x0a) return i + 3;
    if (i + 2 >= bytes.byteLength) break;
  }
  return -1;
}

/** The status line and fields of a head; NotValidHttp for anything a client could be misled by. */
export function parseHead(text: string): AnswerHead {
  const lines = text.split(/\r?\n/);
  while (lines.length && lines[lines.length - 1] === '') lines.pop();
  const status = /^HTTP\/1\.[01] ([1-9][0-9]{2})(?: (.*))?$/.exec(lines[0] ?? '');
  if (!status) throw new NotValidHttp('no status line');
  const fields: string[] = [];
  let length: number | undefined;
  for (const line of lines.slice(1)) {
    // A folded line (obsolete) or a name with space before its colon could be read two ways.
    const colon = line.indexOf(':');
    if (colon <= 0) throw new NotValidHttp('a field has no name');
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) throw new NotValidHttp('a field name is not a token');
    const value = line.slice(colon + 1).trim();
    if (!FIELD_VALUE.test(value)) throw new NotValidHttp('a field value holds a control character');
    const lower = name.toLowerCase();
    if (lower === 'content-length') {
      // Several are one length told again, or the answer is ambiguous.
      for (const one of value.split(',')) {
        if (!/^[0-9]{1,15}$/.test(one.trim())) throw new NotValidHttp('a content length is not a number');
        const n = Number(one.trim());
        if (length !== undefined && n !== length) throw new NotValidHttp('two content lengths');
        length = n;
      }
    }
    fields.push(lower, value);
  }
  // Both framings at once is how responses are smuggled: refused rather than guessed.
  if (length !== undefined && lastValue(fields, 'transfer-encoding') !== undefined) throw new NotValidHttp('both a length and a transfer coding');
  return { status: Number(status[1]), reason: carriedReason(status[2]), fields, length };
}

/** A reason phrase when it is one HTTP can carry on (no control bytes); else none, and the status's own is sent. */
export function carriedReason(reason: string | undefined): string | undefined {
  return reason && /^[\t\x20-\x7e]*$/.test(reason) ? reason : undefined;
}

function lastValue(fields: string[], name: string): string | undefined {
  let found: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) found = found === undefined ? fields[i + 1] : `${found}, ${fields[i + 1]}`;
  return found;
}
