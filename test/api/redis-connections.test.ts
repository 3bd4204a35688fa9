import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { createRequestRedis, waitForRedis } from '../../shared/redis.ts';
import { createSandboxQueue } from '../../shared/jobs/catalogue.ts';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { testConfig } from '../helpers/config.ts';

// An auto-pipelined Redis connection (keys, buckets, leases) makes each batch an
// ioredis Pipeline, which copies every script its connection defines onto itself. BullMQ defines
// dozens on the connection it is given, so the queues have a connection of their own, and the
// request path's holds Paddock's few scripts only (docs/benchmarks.md). It batches
// a turn's commands by corking its socket (shared/redis.ts), which the second test pins.

const scripts = (redis: Redis): string[] => Object.keys((redis as unknown as { scriptsSet: Record<string, unknown> }).scriptsSet);

test("the request path's Redis connection holds Paddock's scripts only; the queues' scripts are on their own connection", async () => {
  const api = await startTestApi();
  const account = await newAccount(api.url);
  assert.equal((await call(api.url, 'GET', '/v1/account', { token: account.key })).status, 200);
  await Promise.all([api.deps.queue.waitUntilReady(), api.deps.webhookQueue.waitUntilReady()]);
  // What a queue does to the connection it is given: without this, the test would show nothing.
  const given = createRequestRedis(api.deps.config.REDIS_URL);
  const probe = createSandboxQueue(given, `${api.deps.config.PADDOCK_REDIS_PREFIX}-probe`);
  try {
    await probe.waitUntilReady();
    assert.ok(scripts(given).filter((name) => !name.startsWith('paddock')).length >= 10, `a queue defines its scripts on its connection: ${scripts(given).join(', ')}`);
  } finally {
    await probe.close();
    given.disconnect();
  }
  const onRequestPath = scripts(api.deps.redis);
  assert.ok(onRequestPath.length > 0, 'the key lookup and the bucket are scripts');
  assert.deepEqual(
    onRequestPath.filter((name) => !name.startsWith('paddock')),
    [],
    `only Paddock's scripts on the request path's connection: ${onRequestPath.join(', ')}`,
  );
});

test("the request path's commands of one turn go out in one write, and each turn's in that turn", async (t) => {
  const redis = createRequestRedis(testConfig().REDIS_URL);
  t.after(() => redis.disconnect());
  await waitForRedis(redis);
  const socket = (redis as unknown as { stream: Socket & { _write: Function; _writev: Function } }).stream;
  let writes = 0;
  for (const name of ['_write', '_writev'] as const) {
    const original = socket[name];
    socket[name] = function (this: Socket, ...args: unknown[]) {
      writes++;
      return original.apply(this, args);
    };
  }
  const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => redis.echo(`turn-one-${i}`)));
  assert.deepEqual(replies, Array.from({ length: 20 }, (_, i) => `turn-one-${i}`));
  assert.equal(writes, 1, 'twenty commands of one turn, one write');
  assert.equal(await redis.echo('turn-two'), 'turn-two');
  assert.equal(writes, 2, 'a later turn, a write of its own, without waiting for more');
});
