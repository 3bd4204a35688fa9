import { after, test } from 'node:test';
import type { Queue } from 'bullmq';
import { createRequestRedis } from '../../shared/redis.ts';
import { createSandboxQueue } from '../../shared/jobs/catalogue.ts';
import assert from 'node:assert/strict';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';

// A new sandbox's jobs are queued once its create has committed (shared/sandboxes/engine.ts). When
// they cannot be, the sandbox would never start: it is ended at once, its quota released, and the
// request says so; nothing is left pending.

test('a create whose jobs cannot be queued answers 503, and its sandbox is failed at once, holding no quota', async () => {
  const api = await startTestApi({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '1' } });
  const a = await newAccount(api.url, 'unscheduled');
  // The sandbox queue on a Redis that is not there (a closed loopback port); the request path's
  // Redis (credentials, buckets) still there.
  const gone = createRequestRedis('redis://127.0.0.1:1', { retryStrategy: () => null });
  gone.on('error', () => undefined);
  const deps = api.deps as { queue: Queue };
  const queue = deps.queue;
  deps.queue = createSandboxQueue(gone, api.deps.config.PADDOCK_REDIS_PREFIX);
  after(() => {
    deps.queue = queue;
    gone.disconnect();
  });
  const res = await call(api.url, 'POST', '/v1/sandboxes?wait=false', { token: a.key, body: {} });
  assert.equal(res.status, 503, JSON.stringify(res.body));
  assert.equal(res.body.code, 'service_unavailable');
  assert.doesNotMatch(JSON.stringify(res.body), /redis|bull|stack/i);
  const list = await call(api.url, 'GET', '/v1/sandboxes?state=all', { token: a.key });
  assert.equal(list.status, 200);
  assert.equal(list.body.data.length, 1);
  const [s] = list.body.data;
  assert.equal(s.state, 'destroyed');
  assert.equal(s.status, 'failed');
  assert.equal(s.failureMessage, 'The sandbox could not be scheduled.');
  const account = await call(api.url, 'GET', '/v1/account', { token: a.key });
  assert.equal(account.status, 200);
  assert.equal(account.body.usage.concurrentSandboxes.active, 0, JSON.stringify(account.body.usage));
});
