import { test } from 'node:test';
import { PassThrough, Writable } from 'node:stream';
import assert from 'node:assert/strict';
import { ndjsonBody } from '../../api/services/exec/ndjson.ts';

test('an NDJSON body holds its writer while no one reads, and drops a reader that stalls past the write timeout', async () => {
  let stalled = 0;
  const stream = new PassThrough();
  const { line } = ndjsonBody(stream, 150, () => stalled++);
  let wait: void | Promise<void>;
  let written = 0;
  while (!((wait = line({ type: 'stdout', data: 'x'.repeat(1024) })) instanceof Promise)) written++;
  assert.ok(written < 256, `the body took ${written} KiB before asking its writer to wait`);
  const started = performance.now();
  await wait;
  assert.ok(performance.now() - started >= 100);
  assert.equal(stalled, 1);
  assert.equal(stream.destroyed, true);
  assert.equal(line({ type: 'stdout', data: 'more' }), undefined, 'nothing more is written once dropped');
});

test('an NDJSON body lets its writer go on as soon as the reader catches up', async () => {
  let stalled = 0;
  const stream = new PassThrough();
  const { line } = ndjsonBody(stream, 5000, () => stalled++);
  let wait: void | Promise<void>;
  while (!((wait = line({ type: 'stdout', data: 'y'.repeat(1024) })) instanceof Promise));
  stream.resume();
  await wait;
  assert.equal(stalled, 0);
  assert.equal(stream.destroyed, false);
});

test('an NDJSON body waits for a reader that takes its buffer slowly, longer than the write timeout, but steadily', async () => {
  let stalled = 0;
  let taken = 0;
  // Takes a line every 50 ms: the buffer the body fills before it waits takes far longer than
  // the 150 ms timeout to go, while each window sees some of it taken.
  const stream = new Writable({
    highWaterMark: 8 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      taken += chunk.length;
      setTimeout(callback, 50);
    },
  });
  const { line } = ndjsonBody(stream, 150, () => stalled++);
  let wait: void | Promise<void>;
  let lines = 0;
  while (!((wait = line({ type: 'stdout', data: 'z'.repeat(1024) })) instanceof Promise)) lines++;
  const started = performance.now();
  await wait;
  const waited = performance.now() - started;
  assert.ok(waited > 150, `drained after ${waited} ms: the test must outlast the timeout to mean anything`);
  assert.equal(stalled, 0, 'a reader taking its buffer steadily is not dropped');
  assert.equal(stream.destroyed, false);
  assert.ok(taken > 1024 * lines, `${taken} bytes taken`);
});
