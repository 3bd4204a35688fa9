import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createRequestRedis, waitForRedis } from '../../shared/redis.ts';
import { createSandboxQueue } from '../../shared/jobs/catalogue.ts';
import { readyQueue } from '../../shared/jobs/ready-queue.ts';
import { startPrivateRedis } from '../helpers/private-services.ts';

// The fail-fast connection's command timeout, and BullMQ's queue on it: a queue whose first
// command (its Redis version check) times out fails every later call, so readyQueue makes it
// again; and an event loop held up past the timeout fails no command whose reply has arrived.

const TIMEOUT_MS = 50;
// A Redis of the file's own: the tests pause it.
const server = await startPrivateRedis();
const admin = new Redis(server.url);

/** Holds the event loop, as a large module loading does. */
function holdLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy: nothing else runs
  }
}

/** How long Redis answers nothing once the first test pauses it: many timeouts' worth, so that a busy host's stall between the pause and a queue's first command does not outlast it. */
const PAUSE_MS = TIMEOUT_MS * 10;

async function withConnection(work: (make: () => Queue, makes: () => number, redis: Redis) => Promise<void>, options: { pausedMs?: number } = {}): Promise<void> {
  const redis = createRequestRedis(server.url, { commandTimeout: TIMEOUT_MS });
  redis.on('error', () => undefined); // the timeouts are asserted, not printed
  await waitForRedis(redis);
  const prefix = `t${randomBytes(6).toString('hex')}`;
  let makes = 0;
  // Redis answers nothing for a while from before the first queue sends its first command: the
  // pause is in force once its own reply has come, so no queue's command can arrive ahead of it.
  if (options.pausedMs) await admin.call('CLIENT', 'PAUSE', String(options.pausedMs), 'ALL');
  const make = () => {
    makes++;
    const queue = createSandboxQueue(redis, prefix);
    queue.on('error', () => undefined); // the failed check is asserted, not printed
    return queue;
  };
  try {
    await work(make, () => makes, redis);
  } finally {
    redis.disconnect();
  }
}

test.after(() => admin.disconnect());

test('a queue whose first command timed out fails every later call', async () => {
  await withConnection(async (make, _makes, redis) => {
    const queue = make();
    await assert.rejects(queue.waitUntilReady(), /Command timed out/);
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS + TIMEOUT_MS * 2));
    assert.equal(await redis.ping(), 'PONG', 'Redis answers again');
    await assert.rejects(queue.getJobCounts(), /Command timed out/, 'still failing once Redis answers again');
    await queue.close().catch(() => undefined);
  }, { pausedMs: PAUSE_MS });
});

test('readyQueue makes the queue again until its first command passes, and says so', async () => {
  await withConnection(async (make, makes) => {
    const warnings: unknown[] = [];
    const queue = await readyQueue(make, { redisUp: true, log: { warn: (obj: unknown) => void warnings.push(obj) } });
    assert.ok(makes() >= 2, `${makes()} makes`);
    assert.equal(warnings.length, makes() - 1);
    assert.deepEqual(await queue.getJobCounts('waiting'), { waiting: 0 });
    await queue.close();
    // Over before readyQueue's makes are: a few of them time out, a later one passes.
  }, { pausedMs: TIMEOUT_MS * 2 });
});

test('without Redis at start, the queue is taken as it is made: start-up does not wait', async () => {
  await withConnection(async (make, makes) => {
    const queue = await readyQueue(make, { redisUp: false, log: { warn: () => undefined } });
    assert.equal(makes(), 1);
    await queue.close().catch(() => undefined);
  });
});

test('an event loop held past the timeout fails no command whose reply has arrived', async () => {
  await withConnection(async (_make, _makes, redis) => {
    const pings = Array.from({ length: 5 }, () => redis.ping());
    setImmediate(() => holdLoop(TIMEOUT_MS * 4));
    assert.deepEqual(await Promise.all(pings), ['PONG', 'PONG', 'PONG', 'PONG', 'PONG']);
  });
});

test('a command Redis does not answer in time fails with the timeout', async () => {
  await withConnection(async (_make, _makes, redis) => {
    await admin.call('CLIENT', 'PAUSE', String(TIMEOUT_MS * 6), 'ALL');
    await assert.rejects(redis.ping(), /Command timed out/);
  });
});
