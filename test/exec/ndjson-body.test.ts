import { test } from 'node:test';
import { PassThrough } from 'node:stream';
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
