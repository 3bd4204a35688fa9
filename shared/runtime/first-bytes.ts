import type { Socket } from 'node:net';

// The name a connection to the gateway is for, from its first bytes: the server name of a TLS
// ClientHello (SNI), or the Host of a plain HTTP request. Read with a deadline and a cap, and
// kept, to be sent on as they came: the gateway passes the connection through untouched.

/** A ClientHello's first record, or a request's head: at most this much is held before a name is found. */
export const FIRST_BYTES_MAX = 16 * 1024 + 5;
const TLS_HANDSHAKE = 0x16;
const CLIENT_HELLO = 0x01;
const SERVER_NAME = 0x0000;
const HOST_NAME = 0x00;
/** A name as the egress takes one (a server name, a Host): lowercase letters, digits, hyphens and underscores in dotted labels, at least two. */
export const DOMAIN_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)+$/;

export interface FirstBytes {
  /** The name asked for, lowercase, without a final dot; undefined when there is none (or it is not a domain). */
  name?: string;
  /** The port an HTTP request's Host names, when it names one. */
  port?: number;
  /** The bytes read, to send on first. */
  head: Buffer;
}

/**
 * Reads the connection until its name is known or cannot be: undefined when it ended, went silent
 * for `timeoutMs`, or sent FIRST_BYTES_MAX bytes with no name in them. The socket is left paused.
 */
export function readFirstBytes(socket: Socket, kind: 'tls' | 'http', timeoutMs: number): Promise<FirstBytes | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (found: FirstBytes | undefined) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      socket.pause();
      resolve(found);
    };
    const onEnd = () => done(undefined);
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.byteLength;
      const head = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const read = kind === 'tls' ? serverName(head) : hostOf(head);
      if (read === 'more') {
        if (size >= FIRST_BYTES_MAX) done(undefined);
        return;
      }
      done(read && { ...read, head });
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    socket.resume();
  });
}

/** The SNI of a ClientHello's first record; 'more' while the record is incomplete; undefined when it is no ClientHello or names none. */
export function serverName(bytes: Buffer): { name: string } | undefined | 'more' {
  if (bytes.byteLength < 5) return 'more';
  if (bytes[0] !== TLS_HANDSHAKE) return undefined;
  const recordLength = bytes.readUInt16BE(3);
  if (bytes.byteLength < 5 + recordLength) return 'more';
  const record = bytes.subarray(5, 5 + recordLength);
  let at = 0;
  const need = (n: number) => at + n <= record.byteLength;
  if (!need(4) || record[0] !== CLIENT_HELLO) return undefined;
  at = 4 + 2 + 32; // handshake header, client version, random
  if (!need(1)) return undefined;
  at += 1 + record[at]!; // session id
  if (!need(2)) return undefined;
  at += 2 + record.readUInt16BE(at); // cipher suites
  if (!need(1)) return undefined;
  at += 1 + record[at]!; // compression methods
  if (!need(2)) return undefined;
  const extensionsEnd = Math.min(record.byteLength, at + 2 + record.readUInt16BE(at));
  at += 2;
  while (at + 4 <= extensionsEnd) {
    const type = record.readUInt16BE(at);
    const length = record.readUInt16BE(at + 2);
    at += 4;
    if (at + length > extensionsEnd) return undefined;
    if (type === SERVER_NAME) {
      // The list: its length, then entries of a type and a length-prefixed name; the host name is the one that counts.
      let entry = at + 2;
      while (entry + 3 <= at + length) {
        const nameType = record[entry]!;
        const nameLength = record.readUInt16BE(entry + 1);
        const start = entry + 3;
        if (start + nameLength > at + length) return undefined;
        if (nameType === HOST_NAME) return asName(record.toString('latin1', start, start + nameLength));
        entry = start + nameLength;
      }
      return undefined;
    }
    at += length;
  }
  return undefined;
}

/** The Host of a request's head; 'more' until the head is whole; undefined without exactly one valid Host. */
export function hostOf(bytes: Buffer): { name: string; port?: number } | undefined | 'more' {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return 'more';
  const lines = bytes.toString('latin1', 0, end).split('\r\n').slice(1);
  const hosts = lines.filter((line) => /^host[ \t]*:/i.test(line)).map((line) => line.slice(line.indexOf(':') + 1).trim());
  if (hosts.length !== 1) return undefined;
  const match = /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(hosts[0]!);
  if (!match) return undefined;
  const named = asName(match[1]!);
  if (!named) return undefined;
  return match[2] === undefined ? named : { ...named, port: Number(match[2]) };
}

function asName(text: string): { name: string } | undefined {
  const name = text.toLowerCase().replace(/\.$/, '');
  return DOMAIN_NAME.test(name) ? { name } : undefined;
}
