import { isIP } from 'node:net';

// The little of DNS's wire format (RFC 1035) Paddock's resolver for a sandbox reads and writes:
// a query's one question, a refusal of it, and the addresses an answer to it gives. Every message
// comes from an untrusted side (the sandbox, or an upstream server a sandbox may have reached
// through an allowed name): every read is bounds-checked, a name is at most 255 bytes, and
// compression pointers are followed a bounded number of times.

export const TYPE_A = 1;
export const TYPE_AAAA = 28;
const CLASS_IN = 1;
const HEADER_BYTES = 12;
const MAX_POINTERS = 16;

/** NXDOMAIN: the name does not exist (for this sandbox). */
export const RCODE_NXDOMAIN = 3;
/** The query is not one this resolver takes (an opcode other than a query, several questions). */
export const RCODE_NOTIMP = 4;
export const RCODE_SERVFAIL = 2;

export interface Question {
  id: number;
  /** Lowercase, without the final dot. */
  name: string;
  type: number;
  qclass: number;
  /** Where the question ends in the message: its bytes are [12, end). */
  end: number;
}

export interface AnsweredAddress {
  family: 4 | 6;
  address: string;
  ttl: number;
}

/** A query's question; undefined for anything else (an answer, several questions, a malformed name). */
export function readQuestion(message: Buffer): Question | undefined {
  if (message.byteLength < HEADER_BYTES) return undefined;
  const flags = message.readUInt16BE(2);
  // QR set: an answer, not a query.
  if (flags & 0x8000) return undefined;
  if (message.readUInt16BE(4) !== 1) return undefined;
  const read = readName(message, HEADER_BYTES, false);
  if (!read || read.next + 4 > message.byteLength) return undefined;
  return { id: message.readUInt16BE(0), name: read.name, type: message.readUInt16BE(read.next), qclass: message.readUInt16BE(read.next + 2), end: read.next + 4 };
}

/** Whether the query's opcode is a standard query (0). */
export function isStandardQuery(message: Buffer): boolean {
  return ((message.readUInt16BE(2) >> 11) & 0xf) === 0;
}

/** An answer to `query` with no records and `rcode`: its id, its question, recursion as asked. */
export function refusal(query: Buffer, question: Question, rcode: number): Buffer {
  const answer = Buffer.alloc(question.end);
  query.copy(answer, 0, 0, question.end);
  const recursionDesired = query.readUInt16BE(2) & 0x0100;
  // QR, the same opcode (0), RD as asked, RA, the code.
  answer.writeUInt16BE(0x8000 | recursionDesired | 0x0080 | rcode, 2);
  answer.writeUInt16BE(1, 4);
  answer.writeUInt16BE(0, 6);
  answer.writeUInt16BE(0, 8);
  answer.writeUInt16BE(0, 10);
  return answer;
}

/**
 * An answer to `query` of its own: for an A question, one record pointing at `address` (IPv4) with
 * `ttl`; for any other type, no record (the name exists, with nothing of that type).
 */
export function localAnswer(query: Buffer, question: Question, address: string, ttl: number): Buffer {
  const head = refusal(query, question, 0);
  if (question.type !== TYPE_A || question.qclass !== CLASS_IN) return head;
  head.writeUInt16BE(1, 6);
  const record = Buffer.alloc(16);
  // A pointer to the question's name (at the header's end), type A, class IN, the TTL, 4 bytes.
  record.writeUInt16BE(0xc000 | HEADER_BYTES, 0);
  record.writeUInt16BE(TYPE_A, 2);
  record.writeUInt16BE(CLASS_IN, 4);
  record.writeUInt32BE(ttl, 6);
  record.writeUInt16BE(4, 10);
  address.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
  return Buffer.concat([head, record]);
}

/**
 * The addresses (A and AAAA records of class IN, in the answer section, CNAME chains included) an
 * upstream answer gives for `question`; undefined when it is not an answer to that question (its
 * id, its question or its form differ): such a message is not passed on.
 */
export function answeredAddresses(answer: Buffer, question: Question): AnsweredAddress[] | undefined {
  if (answer.byteLength < HEADER_BYTES || answer.readUInt16BE(0) !== question.id) return undefined;
  if (!(answer.readUInt16BE(2) & 0x8000) || answer.readUInt16BE(4) !== 1) return undefined;
  const asked = readName(answer, HEADER_BYTES, true);
  if (!asked || asked.name !== question.name || asked.next + 4 > answer.byteLength) return undefined;
  if (answer.readUInt16BE(asked.next) !== question.type || answer.readUInt16BE(asked.next + 2) !== question.qclass) return undefined;
  const count = answer.readUInt16BE(6);
  const addresses: AnsweredAddress[] = [];
  let at = asked.next + 4;
  for (let i = 0; i < count; i++) {
    const owner = readName(answer, at, true);
    if (!owner || owner.next + 10 > answer.byteLength) return undefined;
    const type = answer.readUInt16BE(owner.next);
    const rclass = answer.readUInt16BE(owner.next + 2);
    const ttl = answer.readUInt32BE(owner.next + 4);
    const length = answer.readUInt16BE(owner.next + 8);
    const data = owner.next + 10;
    if (data + length > answer.byteLength) return undefined;
    if (rclass === CLASS_IN && type === TYPE_A && length === 4) {
      addresses.push({ family: 4, address: Array.from(answer.subarray(data, data + 4)).join('.'), ttl });
    } else if (rclass === CLASS_IN && type === TYPE_AAAA && length === 16) {
      const groups: string[] = [];
      for (let g = 0; g < 8; g++) groups.push(answer.readUInt16BE(data + 2 * g).toString(16));
      const address = groups.join(':');
      if (isIP(address) === 6) addresses.push({ family: 6, address, ttl });
    }
    at = data + length;
  }
  return addresses;
}

/**
 * The name at `offset`, lowercase and without the final dot, and where what follows it begins;
 * undefined when it is malformed, longer than 255 bytes, or (unless `pointers`) compressed.
 */
function readName(message: Buffer, offset: number, pointers: boolean): { name: string; next: number } | undefined {
  const labels: string[] = [];
  let at = offset;
  let next: number | undefined;
  let jumps = 0;
  let bytes = 0;
  for (;;) {
    if (at >= message.byteLength) return undefined;
    const length = message[at]!;
    if (length === 0) {
      next ??= at + 1;
      break;
    }
    if ((length & 0xc0) === 0xc0) {
      if (!pointers || at + 1 >= message.byteLength || ++jumps > MAX_POINTERS) return undefined;
      next ??= at + 2;
      at = ((length & 0x3f) << 8) | message[at + 1]!;
      continue;
    }
    if (length & 0xc0) return undefined;
    if (at + 1 + length > message.byteLength) return undefined;
    bytes += length + 1;
    if (bytes > 255) return undefined;
    const label = message.toString('latin1', at + 1, at + 1 + length).toLowerCase();
    // A dot inside a label would read as two labels: "pypi.org" as one label is not pypi.org.
    if (label.includes('.')) return undefined;
    labels.push(label);
    at += 1 + length;
  }
  return { name: labels.join('.'), next };
}
