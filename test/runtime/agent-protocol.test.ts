import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { FrameReader, HEADER_BYTES } from '../../shared/runtime/local/agent/protocol.ts';

// The agent's frames as the runtime reads them (shared/runtime/local/agent/protocol.ts): however
// the bytes are cut into reads, output comes in order and whole, and every other frame whole.

function encode(type: string, payload: Buffer): Buffer {
  const head = Buffer.alloc(HEADER_BYTES);
  head.write(type, 0, 'latin1');
  head.writeUInt32LE(payload.byteLength, 1);
  return Buffer.concat([head, payload]);
}

test('frames cut into reads at every kind of place come out the same: output in pieces, in order; the rest whole', () => {
  for (let round = 0; round < 200; round++) {
    const sent: { type: string; payload: Buffer }[] = [];
    for (let i = 0; i < 12; i++) {
      const type = ['O', 'E', 'C', 'X', 'O'][Math.floor(Math.random() * 5)]!;
      const size = type === 'X' ? 8 : type === 'C' ? 0 : Math.floor(Math.random() * 70_000);
      sent.push({ type, payload: randomBytes(size) });
    }
    const stream = Buffer.concat(sent.map((f) => encode(f.type, f.payload)));
    const reader = new FrameReader();
    const got: { type: string; payload: Buffer }[] = [];
    for (let at = 0; at < stream.length; ) {
      const cut = Math.min(stream.length, at + 1 + Math.floor(Math.random() * (Math.random() < 0.3 ? 7 : 90_000)));
      reader.push(stream.subarray(at, cut));
      at = cut;
      for (let frame = reader.next(); frame; frame = reader.next()) got.push(frame);
    }
    // Output pieces join up per frame; control frames arrive whole, once each.
    const joined: { type: string; payload: Buffer }[] = [];
    let bytesLeft = 0;
    for (const f of sent) {
      if ((f.type === 'O' || f.type === 'E') && f.payload.length === 0) {
        const whole = got.shift()!;
        assert.equal(whole.type, f.type);
        assert.equal(whole.payload.length, 0);
        joined.push(whole);
        continue;
      }
      if (f.type === 'O' || f.type === 'E') {
        const parts: Buffer[] = [];
        bytesLeft = f.payload.length;
        while (bytesLeft > 0) {
          const piece = got.shift()!;
          assert.equal(piece.type, f.type);
          parts.push(piece.payload);
          bytesLeft -= piece.payload.length;
        }
        assert.equal(bytesLeft, 0, 'no piece runs past its frame');
        joined.push({ type: f.type, payload: Buffer.concat(parts) });
      } else joined.push(got.shift()!);
    }
    assert.equal(got.length, 0);
    assert.deepEqual(joined.map((f) => f.type), sent.map((f) => f.type));
    joined.forEach((f, i) => assert.ok(f.payload.equals(sent[i]!.payload), `frame ${i} (${f.type})`));
  }
});
