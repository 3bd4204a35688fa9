import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReadBuffers } from '../shared/read-buffers.ts';

// test-plan: once (memory bookkeeping; the proxies that use it are driven through their traffic by
// test/previews/ on both runtimes and by the egress tests)

test('a buffer serves another read only once every hold on it is released: the read, and each write of a piece of it', () => {
  const buffers = new ReadBuffers();
  const first = buffers.next();
  const piece = first.subarray(10, 20);
  // Two writes of pieces of it under way, then the read's own hold released.
  buffers.hold(piece);
  buffers.hold(first.subarray(30, 40));
  buffers.release(first);
  const second = buffers.next();
  assert.notEqual(second.buffer, first.buffer, 'held by two writes: not given out again');
  buffers.release(piece);
  assert.notEqual(buffers.next().buffer, first.buffer, 'still held by one write');
  buffers.release(first.subarray(30, 40));
  assert.equal(buffers.next().buffer, first.buffer, 'free once the last write is done');
});

test("a chunk not of its buffers (a copy, a Kubernetes frame's) is left alone; a release past its last hold does not free it twice", () => {
  const buffers = new ReadBuffers();
  const foreign = Buffer.from('not ours');
  buffers.hold(foreign);
  buffers.release(foreign);
  buffers.release(foreign);
  const own = buffers.next();
  buffers.release(own);
  buffers.release(own);
  const again = buffers.next();
  assert.equal(again.buffer, own.buffer);
  // Given out once only: the next is another.
  assert.notEqual(buffers.next().buffer, own.buffer);
  assert.equal(again.byteLength, 64 * 1024);
});
