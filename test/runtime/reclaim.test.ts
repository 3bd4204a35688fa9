import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { test } from 'node:test';
import { bytesMoved, RECLAIM_EVERY_BYTES } from '../../shared/reclaim.ts';

// shared/reclaim.ts: the bulk-data paths (exec output, archives, request bodies) count what they
// read, and every few MiB the dead chunks outside V8's heap are collected, instead of ~64 MB of
// them piling up before V8's own external-memory trigger.

test('every RECLAIM_EVERY_BYTES counted is followed by a scavenge, and fewer bytes start none', async () => {
  const kinds: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) kinds.push((entry as unknown as { detail: { kind: number } }).detail.kind);
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    // The counter carries over from other callers: a first full step brings it back to zero.
    bytesMoved(RECLAIM_EVERY_BYTES);
    await new Promise((resolve) => setTimeout(resolve, 20));
    kinds.length = 0;
    // Four steps, each in a turn of its own; then less than a step.
    for (let i = 0; i < 8; i++) {
      bytesMoved(RECLAIM_EVERY_BYTES / 2);
      if (i % 2 === 1) await new Promise((resolve) => setImmediate(resolve));
    }
    bytesMoved(RECLAIM_EVERY_BYTES / 2 - 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const minor = kinds.filter((kind) => kind === constants.NODE_PERFORMANCE_GC_MINOR).length;
    assert.ok(minor >= 4, `4 steps of ${RECLAIM_EVERY_BYTES} bytes, ${minor} scavenges (${kinds.join(',')})`);
    assert.ok(minor <= 5, `at most one scavenge a step: ${minor}`);
  } finally {
    observer.disconnect();
  }
});

test('a 256 MiB copy through a socket that counts its reads holds a bounded amount of dead chunks outside the heap', async () => {
  const TOTAL = 256 * 1024 * 1024;
  const block = Buffer.alloc(64 * 1024, 7);
  const source = createServer((socket) => {
    let sent = 0;
    const pump = (): void => {
      while (sent < TOTAL) {
        sent += block.length;
        if (!socket.write(block)) return void socket.once('drain', pump);
      }
      socket.end();
    };
    pump();
  });
  source.listen(0, '127.0.0.1');
  await once(source, 'listening');
  try {
    const reader: Socket = connect((source.address() as AddressInfo).port, '127.0.0.1');
    const base = process.memoryUsage().arrayBuffers;
    let peak = base;
    let received = 0;
    reader.on('data', (chunk: Buffer) => {
      bytesMoved(chunk.length);
      received += chunk.length;
      if ((received & 0xfffff) < chunk.length) peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    });
    await once(reader, 'end');
    assert.equal(received, TOTAL);
    const extraMb = (peak - base) / 1024 / 1024;
    // Without the count, V8 lets ~64 MB of them accumulate (its external-memory trigger).
    assert.ok(extraMb < 24, `dead chunks outside the heap peaked ${extraMb.toFixed(1)} MB over the start`);
  } finally {
    source.close();
  }
});

test('steps passed within one turn share one scavenge', async () => {
  let minor = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if ((entry as unknown as { detail: { kind: number } }).detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++;
  });
  bytesMoved(RECLAIM_EVERY_BYTES);
  await new Promise((resolve) => setTimeout(resolve, 20));
  observer.observe({ entryTypes: ['gc'] });
  try {
    for (let i = 0; i < 16; i++) bytesMoved(RECLAIM_EVERY_BYTES);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(minor >= 1 && minor <= 2, `${minor} scavenges`);
  } finally {
    observer.disconnect();
  }
});

test('while V8 marks the old generation, no scavenge is asked for: it would finish the marking in one pause', async () => {
  type Seen = { kind: number; flags: number; start: number };
  const entries: Seen[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail = (entry as unknown as { detail: { kind: number; flags: number } }).detail;
      entries.push({ kind: detail.kind, flags: detail.flags, start: entry.startTime });
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const kept: unknown[] = [];
  const forcedMajor = (e: Seen) => e.kind === constants.NODE_PERFORMANCE_GC_MAJOR && (e.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0;
  try {
    let asked = 0;
    // Many rounds: a scavenge asked for at each, while old objects pile up and V8 marks them now
    // and then. Without the guard, some of these scavenges became forced major collections.
    for (let turn = 0; turn < 600; turn++) {
      for (let i = 0; i < 20_000; i++) kept.push({ i, text: `row ${i}` });
      if (kept.length > 1_500_000) kept.splice(0, 750_000);
      bytesMoved(RECLAIM_EVERY_BYTES);
      asked++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(asked > 0 && entries.some((e) => e.kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL), 'V8 marked incrementally meanwhile');
    assert.ok(entries.some((e) => e.kind === constants.NODE_PERFORMANCE_GC_MINOR && (e.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0), 'scavenges were asked for');
    assert.deepEqual(entries.filter(forcedMajor), [], 'no scavenge asked for became a major collection');
  } finally {
    observer.disconnect();
    kept.length = 0;
  }
});
