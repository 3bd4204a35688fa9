import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RunningApi } from '../../api/server.ts';
import { route } from '../../api/routes/route.ts';
import type { BucketName } from '../../api/ratelimit/buckets.ts';
import { startTestApi } from '../helpers/stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { uniqueEmail } from '../helpers/config.ts';
import type { Scope } from '../../shared/scopes.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashApiKey } from '../../api/auth/api-key-format.ts';

// Buckets refill at their per-minute rate: with 10 a minute one token comes back every 6 s, far
// longer than these bursts take, so the counts below hold on a slow machine too.

/** Test-only routes behind the account-keyed buckets; each counts the requests it served. */
function bucketRoutes() {
  const served = { sandbox_ops: 0, sandbox_lifecycle: 0, account: 0 };
  const make = (bucket: Exclude<BucketName, 'auth'>, method: 'get' | 'post', path: string, scope?: Scope) =>
    route(
      {
        method,
        path,
        operationId: `test_${bucket}`,
        summary: `test route behind ${bucket}`,
        tag: 'test',
        auth: 'apiKey',
        scope,
        bucket,
        responses: { 200: { description: 'served' } },
        errors: ['rate_limited'],
      },
      async (ctx) => {
        served[bucket]++;
        ctx.body = { served: true };
      },
    );
  return {
    served,
    routes: [make('sandbox_ops', 'get', '/v1/test/ops'), make('sandbox_lifecycle', 'post', '/v1/test/lifecycle', 'sandboxes:write')],
  };
}

async function stack(overrides: Record<string, string>, config?: RunningApi['deps']['config']) {
  const { served, routes } = bucketRoutes();
  const api = config ? await startTestApi({ config, extraRoutes: routes }) : await startTestApi({ overrides, extraRoutes: routes });
  return { api, served };
}

const ops = (url: string, key: string) => call(url, 'GET', '/v1/test/ops', { token: key });
const lifecycle = (url: string, key: string) => call(url, 'POST', '/v1/test/lifecycle', { token: key });

function assertRateLimited(res: JsonResponse, bucket: string): void {
  assertProblem(res, 429, 'rate_limited');
  assert.match(res.headers.get('retry-after') ?? '', /^[1-9]\d*$/, 'Retry-After is whole seconds');
  assert.equal(res.body.bucket, bucket);
}

test('30 requests racing across two replicas against a bucket of 10: exactly 10 pass', async () => {
  const first = await stack({ PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '10' });
  const second = await stack({}, first.api.deps.config);
  const account = await newAccount(first.api.url, 'race');
  // Warm the key lookup (no bucket on /v1/account) so the burst is nothing but bucket takes.
  assert.equal((await call(first.api.url, 'GET', '/v1/account', { token: account.key })).status, 200);
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) => ops(i % 2 ? second.api.url : first.api.url, account.key)),
  );
  const passed = results.filter((r) => r.status === 200);
  assert.equal(passed.length, 10, results.map((r) => r.status).join(','));
  for (const r of results.filter((x) => x.status !== 200)) assertRateLimited(r, 'sandbox_ops');
  // Every success saw a different count of what was left: the takes were atomic.
  const remaining = passed.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y);
  assert.deepEqual(remaining, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  for (const r of passed) assert.equal(r.headers.get('x-ratelimit-limit'), '10');
  assert.equal(first.served.sandbox_ops + second.served.sandbox_ops, 10, 'a refused request never reaches the handler');
});

test('X-RateLimit-Limit and a counting-down X-RateLimit-Remaining on successes, then 429 with Retry-After', async () => {
  const { api } = await stack({ PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: '5' });
  const account = await newAccount(api.url, 'countdown');
  const seen: string[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await lifecycle(api.url, account.key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.headers.get('x-ratelimit-limit'), '5');
    seen.push(res.headers.get('x-ratelimit-remaining') ?? '');
  }
  assert.deepEqual(seen, ['4', '3', '2', '1', '0']);
  const refused = await lifecycle(api.url, account.key);
  assertRateLimited(refused, 'sandbox_lifecycle');
  // 5 a minute: a token every 12 s, and the bucket is empty.
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfter >= 10 && retryAfter <= 12, `Retry-After ${retryAfter}`);
});

test('Retry-After with 60 a minute and an empty bucket is 1', async () => {
  const { api } = await stack({ PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '60' });
  const account = await newAccount(api.url, 'sixty');
  let refused: JsonResponse | undefined;
  // 60 at once, then the few that trickled back while they ran.
  for (let i = 0; i < 120 && !refused; i++) {
    const res = await ops(api.url, account.key);
    if (res.status === 429) refused = res;
    else assert.equal(res.status, 200);
  }
  assert.ok(refused, 'the bucket never ran dry');
  assertRateLimited(refused, 'sandbox_ops');
  assert.equal(refused.headers.get('retry-after'), '1');
});

test('Retry-After with 2 a minute and an empty bucket is about 30', async () => {
  const { api } = await stack({ PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '2' });
  const account = await newAccount(api.url, 'two');
  assert.equal((await ops(api.url, account.key)).status, 200);
  assert.equal((await ops(api.url, account.key)).status, 200);
  const refused = await ops(api.url, account.key);
  assertRateLimited(refused, 'sandbox_ops');
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfter >= 28 && retryAfter <= 30, `Retry-After ${retryAfter}`);
  assert.match(refused.body.detail, /retry in \d+ s/);
});

test('two accounts do not share a bucket: exhausting A leaves B its whole bucket', async () => {
  const { api } = await stack({ PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '3' });
  const [a, b] = await Promise.all([newAccount(api.url, 'bucket-a'), newAccount(api.url, 'bucket-b')]);
  for (let i = 0; i < 3; i++) assert.equal((await ops(api.url, a.key)).status, 200);
  assertRateLimited(await ops(api.url, a.key), 'sandbox_ops');
  const res = await ops(api.url, b.key);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-ratelimit-remaining'), '2');
  // A second key of A shares A's bucket: the limit is the account's, not the key's.
  const second = await call(api.url, 'POST', '/v1/api-keys', { token: a.token, body: { name: 'second' } });
  assert.equal(second.status, 201);
  assertRateLimited(await ops(api.url, second.body.key), 'sandbox_ops');
});

test('sandbox_ops and sandbox_lifecycle are separate buckets with their own limits', async () => {
  const { api } = await stack({ PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '2', PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: '3' });
  const account = await newAccount(api.url, 'separate');
  for (let i = 0; i < 2; i++) assert.equal((await ops(api.url, account.key)).status, 200);
  assertRateLimited(await ops(api.url, account.key), 'sandbox_ops');
  const res = await lifecycle(api.url, account.key);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-ratelimit-limit'), '3');
  assert.equal(res.headers.get('x-ratelimit-remaining'), '2');
});

test('a request refused for its credential takes no token', async () => {
  const { api } = await stack({ PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '2' });
  const account = await newAccount(api.url, 'noauth');
  for (let i = 0; i < 5; i++) {
    assertProblem(await call(api.url, 'GET', '/v1/test/ops', { token: account.token }), 401, 'wrong_credential_type');
    assertProblem(await call(api.url, 'GET', '/v1/test/ops'), 401, 'missing_credential');
  }
  const res = await ops(api.url, account.key);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-ratelimit-remaining'), '1');
});

test('signup and login share a per-IP bucket (PADDOCK_RATE_AUTH_PER_MIN)', async () => {
  const { api } = await stack({ PADDOCK_RATE_AUTH_PER_MIN: '3' });
  const email = uniqueEmail('auth-bucket');
  const signup = await call(api.url, 'POST', '/v1/auth/signup', { body: { email, password: 'correct horse battery' } });
  assert.equal(signup.status, 201);
  assert.equal(signup.headers.get('x-ratelimit-limit'), '3');
  assert.equal(signup.headers.get('x-ratelimit-remaining'), '2');
  const login = await call(api.url, 'POST', '/v1/auth/login', { body: { email, password: 'correct horse battery' } });
  assert.equal(login.status, 200);
  assert.equal(login.headers.get('x-ratelimit-remaining'), '1');
  // A failed login costs a token too: that is what the bucket is for.
  assertProblem(await call(api.url, 'POST', '/v1/auth/login', { body: { email, password: 'wrong password' } }), 401, 'invalid_login');
  assertRateLimited(await call(api.url, 'POST', '/v1/auth/login', { body: { email, password: 'correct horse battery' } }), 'auth');
  assertRateLimited(
    await call(api.url, 'POST', '/v1/auth/signup', { body: { email: uniqueEmail(), password: 'correct horse battery' } }),
    'auth',
  );
  // Authenticated routes are keyed on the account, not on the IP: the session token still works.
  assert.equal((await call(api.url, 'GET', '/v1/api-keys', { token: signup.body.token })).status, 200);
});

test('with PADDOCK_TRUST_PROXY=true the last X-Forwarded-For address selects the auth bucket', async () => {
  const { api } = await stack({ PADDOCK_RATE_AUTH_PER_MIN: '2', PADDOCK_TRUST_PROXY: 'true' });
  const attempt = (forwardedFor?: string) =>
    call(api.url, 'POST', '/v1/auth/login', {
      body: { email: uniqueEmail('xff'), password: 'wrong password' },
      headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
    });
  assertProblem(await attempt('203.0.113.1'), 401, 'invalid_login');
  assertProblem(await attempt('203.0.113.1'), 401, 'invalid_login');
  assertRateLimited(await attempt('203.0.113.1'), 'auth');
  // What the client wrote before the proxy's own entry is not trusted: still 203.0.113.1.
  assertRateLimited(await attempt('198.51.100.7, 203.0.113.1'), 'auth');
  // Another client address has its own bucket, and so has the proxy itself.
  const other = await attempt('203.0.113.2');
  assertProblem(other, 401, 'invalid_login');
  assert.equal(other.headers.get('x-ratelimit-remaining'), '1');
  assertProblem(await attempt(), 401, 'invalid_login');
});

test('with PADDOCK_TRUST_PROXY=false X-Forwarded-For is ignored: one bucket for the connection address', async () => {
  const { api } = await stack({ PADDOCK_RATE_AUTH_PER_MIN: '2', PADDOCK_TRUST_PROXY: 'false' });
  const attempt = (forwardedFor: string) =>
    call(api.url, 'POST', '/v1/auth/login', {
      body: { email: uniqueEmail('noxff'), password: 'wrong password' },
      headers: { 'x-forwarded-for': forwardedFor },
    });
  assertProblem(await attempt('203.0.113.1'), 401, 'invalid_login');
  assertProblem(await attempt('203.0.113.2'), 401, 'invalid_login');
  assertRateLimited(await attempt('203.0.113.3'), 'auth');
  assertRateLimited(await attempt('198.51.100.9'), 'auth');
});

test('invalid bodies on signup still take an auth token (the bucket is checked first)', async () => {
  const { api } = await stack({ PADDOCK_RATE_AUTH_PER_MIN: '2' });
  assertProblem(await call(api.url, 'POST', '/v1/auth/signup', { body: '{' }), 400, 'invalid_json');
  assertProblem(await call(api.url, 'POST', '/v1/auth/signup', { body: {} }), 400, 'invalid_request');
  assertRateLimited(await call(api.url, 'POST', '/v1/auth/signup', { body: {} }), 'auth');
});

test('a 429 carries the security headers and the request id like any answer', async () => {
  const { api } = await stack({ PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '1' });
  const account = await newAccount(api.url, 'headers');
  assert.equal((await ops(api.url, account.key)).status, 200);
  const refused = await call(api.url, 'GET', '/v1/test/ops', { token: account.key, headers: { 'x-request-id': 'rl-check-1' } });
  assertRateLimited(refused, 'sandbox_ops');
  assert.equal(refused.headers.get('x-request-id'), 'rl-check-1');
  assert.equal(refused.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(refused.headers.get('x-ratelimit-limit'), '1');
  assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
});

test('the account bucket covers the routes the others do not: account, allowlist, secrets, API keys', async () => {
  const { api } = await stack({ PADDOCK_RATE_ACCOUNT_PER_MIN: '5' }); // newAccount takes one (its key)
  const [a, b] = await Promise.all([newAccount(api.url, 'acctbucket'), newAccount(api.url, 'acctbucketb')]);
  const answers = [
    await call(api.url, 'GET', '/v1/account', { token: a.key }),
    await call(api.url, 'GET', '/v1/allowlist', { token: a.key }),
    await call(api.url, 'GET', '/v1/secrets', { token: a.key }),
    await call(api.url, 'GET', '/v1/api-keys', { token: a.token }),
  ];
  assert.deepEqual(answers.map((r) => r.status), [200, 200, 200, 200]);
  assert.equal(answers[0]!.headers.get('x-ratelimit-limit'), '5');
  const refused = await call(api.url, 'PUT', '/v1/allowlist', { token: a.key, body: { commands: [] } });
  assertRateLimited(refused, 'account');
  assert.equal((await call(api.url, 'GET', '/v1/account', { token: b.key })).status, 200, 'another account has its own bucket');
});

test('a key refused for its scope spends none of its account’s bucket, whether its lookup was cached or not', async () => {
  // A cached key's lookup takes the route's token in the same Redis script, and only once the key
  // is known to hold the route's scope. 10 a minute: no token comes back during the test.
  const { api, served } = await stack({ PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: '10' });
  const account = await newAccount(api.url, 'scope-bucket');
  const minted = await call(api.url, 'POST', '/v1/api-keys', { token: account.token, body: { name: 'reader', scopes: ['sandboxes:read'] } });
  assert.equal(minted.status, 201, JSON.stringify(minted.body));
  const reader = (minted.body as { key: string }).key;
  // The first refusal looks the key up in PostgreSQL, the rest in the cache.
  for (let i = 0; i < 12; i++) assertProblem(await lifecycle(api.url, reader), 403, 'insufficient_scope');
  const results = [];
  for (let i = 0; i < 11; i++) results.push(await lifecycle(api.url, account.key));
  assert.deepEqual(results.slice(0, 10).map((r) => r.status), Array(10).fill(200), 'the whole bucket is left for a key with the scope');
  assert.equal(results[0]!.headers.get('x-ratelimit-remaining'), '9');
  assertRateLimited(results[10]!, 'sandbox_lifecycle');
  assert.equal(served.sandbox_lifecycle, 10);
});

test('refusals until the bucket\'s next token cost no Redis round trip, and a key revoked meanwhile is rejected at once', async () => {
  // 6 a minute: the bucket stays empty for 10 s, far longer than the refusals below take.
  const { api, served } = await stack({ PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '6' });
  const account = await newAccount(api.url, 'empty-window');
  for (let i = 0; i < 6; i++) assert.equal((await ops(api.url, account.key)).status, 200);
  const { config } = api.deps;
  const cacheKey = `${config.PADDOCK_REDIS_PREFIX}:apikey:${hashApiKey(account.key)}`;
  // The web's own Redis connection, watched as it sends: MONITOR on the Redis every test file
  // shares races its own reply against the others' traffic (ioredis: "Command queue state error").
  const redis = api.deps.redis;
  const send = redis.sendCommand;
  const lookups: string[] = [];
  redis.sendCommand = ((command: Parameters<typeof send>[0], stream?: Parameters<typeof send>[1]) => {
    if (/^eval/i.test(command.name) && command.args.some((arg) => String(arg) === cacheKey)) lookups.push(command.name);
    return send.call(redis, command, stream);
  }) as typeof send;
  try {
    for (let i = 0; i < 20; i++) {
      const refused = await ops(api.url, account.key);
      assertRateLimited(refused, 'sandbox_ops');
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 10, `Retry-After ${retryAfter}`);
      assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
    }
    // The 401 and 403 answers still come first: a credential of the wrong kind, and no credential.
    assertProblem(await call(api.url, 'GET', '/v1/test/ops', { token: account.token }), 401, 'wrong_credential_type');
    await sleep(200);
    assert.equal(lookups.length, 1, `the key was looked up in Redis ${lookups.length} times for 20 refusals: ${lookups.join(', ')}`);
    assert.equal(served.sandbox_ops, 6);
    const revoked = await call(api.url, 'DELETE', `/v1/api-keys/${account.keyId}`, { token: account.token });
    assert.equal(revoked.status, 204);
    assertProblem(await ops(api.url, account.key), 401, 'invalid_credential');
  } finally {
    redis.sendCommand = send;
  }
});

test('a key refused with an empty bucket is served again once the bucket\'s next token comes', async () => {
  // A token every 5 s: the refusals below fit between two tokens on a busy host too (one a second did not).
  const { api, served } = await stack({ PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '12' });
  const account = await newAccount(api.url, 'next-token');
  let refused: JsonResponse | undefined;
  for (let i = 0; i < 120 && !refused; i++) {
    const res = await ops(api.url, account.key);
    if (res.status === 429) refused = res;
  }
  assert.ok(refused, 'the bucket never ran dry');
  // Refused again and again while it is empty, then served within the Retry-After it gave.
  for (let i = 0; i < 5; i++) assertRateLimited(await ops(api.url, account.key), 'sandbox_ops');
  const before = served.sandbox_ops;
  await sleep(Number(refused.headers.get('retry-after')) * 1000 + 50);
  const res = await ops(api.url, account.key);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(served.sandbox_ops, before + 1);
});
