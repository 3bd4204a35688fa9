import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { JsonStringBytes } from '../../api/services/exec/json-string-bytes.ts';
import { outputLines } from '../../api/services/exec/ndjson.ts';

// api/services/exec/json-string-bytes.ts writes a buffered exec's output into its JSON answer
// bytes to bytes. It must say exactly what the string path said: JSON.stringify of the bytes
// decoded by TextDecoder (one U+FFFD per maximal invalid subpart, a leading byte-order mark
// dropped), however the bytes are cut into parts.

const expected = (bytes: Uint8Array): Buffer => Buffer.from(JSON.stringify(new TextDecoder('utf-8').decode(bytes)).slice(1, -1), 'utf8');

function encodeInParts(bytes: Uint8Array, cuts: number[]): Buffer {
  const encoder = new JsonStringBytes();
  const parts: Buffer[] = [];
  let at = 0;
  for (const cut of [...cuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b), bytes.length]) {
    const part = bytes.subarray(at, Math.max(at, cut));
    const out = Buffer.alloc(JsonStringBytes.room(part.length));
    parts.push(out.subarray(0, encoder.encodeInto(part, out)));
    at = Math.max(at, cut);
  }
  parts.push(encoder.end());
  return Buffer.concat(parts);
}

// Bytes that make every branch: controls, quotes, backslashes, every kind of lead and
// continuation byte at its edges, the byte-order mark's.
const EDGES = [0x00, 0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x1f, 0x20, 0x22, 0x41, 0x5c, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbb, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff];
const edgeBytes = fc.array(fc.oneof(fc.constantFrom(...EDGES), fc.integer({ min: 0, max: 255 })), { maxLength: 40 }).map((xs) => Uint8Array.from(xs));

test('whatever the bytes and wherever they are cut, the answer is JSON.stringify of their TextDecoder text', () => {
  fc.assert(
    fc.property(edgeBytes, fc.array(fc.nat(), { maxLength: 6 }), (bytes, cuts) => {
      assert.deepEqual(encodeInParts(bytes, cuts).toString('hex'), expected(bytes).toString('hex'));
    }),
    { numRuns: 20_000 },
  );
});

test('large outputs of every kind: random bytes, NULs, text, a leading byte-order mark, cut at 16 KiB', () => {
  const cases: Record<string, Buffer> = {
    random: randomBytes(200_000),
    nuls: Buffer.alloc(100_000),
    controls: Buffer.alloc(50_000, 0x1b),
    quotes: Buffer.alloc(50_000, 0x22),
    text: Buffer.from('héllo "wörld" \\ ✓ 日本語 𝄞\t\r\n'.repeat(4000)),
    bom: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('after the mark\u0000')]),
    'bom twice': Buffer.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf]),
    'bom cut short': Buffer.from([0xef, 0xbb]),
  };
  for (const [name, bytes] of Object.entries(cases)) {
    const cuts = Array.from({ length: Math.floor(bytes.length / 16384) }, (_, i) => (i + 1) * 16384);
    assert.ok(encodeInParts(bytes, cuts).equals(expected(bytes)), name);
    assert.ok(encodeInParts(bytes, [1, 2, 3]).equals(expected(bytes)), `${name}, cut in the first bytes`);
  }
});

test("a streamed exec's output lines, bytes to bytes, are the lines JSON.stringify wrote of each chunk's text", () => {
  fc.assert(
    fc.property(fc.array(edgeBytes, { maxLength: 6 }), fc.constantFrom('stdout' as const, 'stderr' as const), (chunks, type) => {
      const written: Buffer[] = [];
      const lines = outputLines(type, (bytes) => void written.push(Buffer.from(bytes)));
      for (const chunk of chunks) void lines.chunk(Buffer.from(chunk));
      void lines.end();
      const decoder = new TextDecoder('utf-8');
      const texts = [...chunks.map((chunk) => decoder.decode(chunk, { stream: true })), decoder.decode()].filter(Boolean);
      assert.equal(Buffer.concat(written).toString('utf8'), texts.map((data) => `${JSON.stringify({ type, data })}\n`).join(''));
    }),
    { numRuns: 5_000 },
  );
});

test("a streamed exec's large chunk goes as lines of 16 KiB of output at most, their data its text, through buffers used again", () => {
  for (const [name, chunk] of Object.entries({ random: randomBytes(100_000), nuls: Buffer.alloc(40_000), text: Buffer.from('é'.repeat(30_000)) })) {
    const lines: Buffer[] = [];
    // Each buffer is given back as soon as its line is copied: the next line may reuse it at once.
    const out = outputLines('stdout', (bytes, written) => {
      lines.push(Buffer.from(bytes));
      written?.();
    });
    void out.chunk(chunk);
    void out.end();
    const parsed = lines.map((line) => JSON.parse(line.toString('utf8')) as { type: string; data: string });
    assert.ok(parsed.length >= Math.ceil(chunk.length / 16_384), `${name}: ${parsed.length} lines`);
    assert.ok(parsed.every((line) => line.type === 'stdout' && Buffer.byteLength(line.data) <= 16_384 * 3), name);
    assert.equal(parsed.map((line) => line.data).join(''), new TextDecoder('utf-8').decode(chunk), name);
  }
});
