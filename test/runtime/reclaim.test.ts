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
    await new Promise((resolve) => setImmediate(resolve));
    kinds.length = 0;
    for (let i = 0; i < 8; i++) bytesMoved(RECLAIM_EVERY_BYTES / 2);
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
