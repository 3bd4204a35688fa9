import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { createRequestRedis } from '../../shared/redis.ts';
import { createSandboxQueue } from '../../shared/jobs/catalogue.ts';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';

// The request path's Redis connection (keys, buckets, leases) is auto-pipelined: each batch is an
// ioredis Pipeline, which copies every script its connection defines onto itself. BullMQ defines
// dozens on the connection it is given, so the queues have a connection of their own, and a
// request's pipeline carries Paddock's few scripts only (docs/benchmarks.md, 2026-11-25).

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
