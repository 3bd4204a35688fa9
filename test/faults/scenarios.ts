import assert from 'node:assert/strict';
import { call, type JsonResponse } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { uniqueEmail } from '../helpers/config.ts';

// Quota and rate-limit scenarios over the product's own routes, as functions of base URLs, for
// the replicas harness. (The lifecycle and quota suites themselves run through the replicas too,
// with PADDOCK_TEST_DEPLOYMENT=replicas; the rate-limit suite drives in-process test routes, so
// its cross-replica cases are here.) Each makes its own account, so they can share a stack.

const MISSING_SANDBOX = `sbx_${'0'.repeat(24)}`;

/** `attempts` parallel creates give exactly the concurrent cap; the rest are refused and make nothing. */
export async function concurrentCapScenario(url: string, cap: number, attempts = 20): Promise<string[]> {
  const a = await newAccount(url, 'cap');
  const results = await Promise.all(Array.from({ length: attempts }, () => createSandbox(url, a.key, '?wait=false')));
  const created = results.filter((r) => r.status === 201);
  const refused = results.filter((r) => r.status === 429);
  assert.equal(created.length, cap, JSON.stringify(results.map((r) => r.status)));
  assert.equal(refused.length, attempts - cap);
  for (const r of refused) assertProblem(r, 429, 'concurrent_sandbox_limit_reached');
  const all = await call(url, 'GET', '/v1/sandboxes?state=all', { token: a.key });
  assert.deepEqual(all.body.data.map((s: any) => s.id).sort(), created.map((r) => r.body.id).sort());
  const account = await call(url, 'GET', '/v1/account', { token: a.key });
  assert.equal(account.body.usage.concurrentSandboxes.active, cap);
  for (const r of created) await call(url, 'DELETE', `/v1/sandboxes/${r.body.id}`, { token: a.key });
  return created.map((r) => r.body.id);
}

/**
 * 3 × `capacity` requests racing on the sandbox_ops bucket (PADDOCK_RATE_SANDBOX_OPS_PER_MIN =
 * capacity): exactly `capacity` pass (to the handler, which answers 404 for a sandbox that does
 * not exist), each seeing a different remaining count; the rest answer 429 with Retry-After.
 */
export async function rateLimitRaceScenario(url: string, capacity: number): Promise<void> {
  const a = await newAccount(url, 'race');
  // Warm the key lookup (no bucket on /v1/account) so the burst is nothing but bucket takes.
  assert.equal((await call(url, 'GET', '/v1/account', { token: a.key })).status, 200);
  const results: JsonResponse[] = await Promise.all(
    Array.from({ length: capacity * 3 }, () => call(url, 'GET', `/v1/sandboxes/${MISSING_SANDBOX}/files/ls?path=.`, { token: a.key })),
  );
  const passed = results.filter((r) => r.status !== 429);
  assert.equal(passed.length, capacity, results.map((r) => r.status).join(','));
  for (const r of passed) assertProblem(r, 404, 'sandbox_not_found');
  const remaining = passed.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y);
  assert.deepEqual(remaining, Array.from({ length: capacity }, (_, i) => i));
  for (const r of results.filter((x) => x.status === 429)) {
    assertProblem(r, 429, 'rate_limited');
    assert.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    assert.equal(r.body.bucket, 'sandbox_ops');
  }
}

/**
 * The sandbox_lifecycle bucket (PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN = capacity) taken on
 * alternate webs: one count going down across both, then 429 with a Retry-After of one refill.
 * DELETE of a sandbox that does not exist takes a token, then answers 404.
 */
export async function lifecycleCountdownScenario(webs: string[], capacity: number): Promise<void> {
  const a = await newAccount(webs[0]!, 'countdown');
  const refillMs = 60_000 / capacity;
  const seen: number[] = [];
  const started = Date.now();
  // Down to empty, a token refilled now and then on a slow host: each web's answer counts on from
  // the other's. Buckets of their own would answer every count twice (29, 29, 28, 28…).
  for (let i = 0; seen.at(-1) !== 0; i++) {
    assert.ok(i < capacity * 2, `never emptied: ${seen.join(',')}`);
    const res = await call(webs[i % webs.length]!, 'DELETE', `/v1/sandboxes/${MISSING_SANDBOX}`, { token: a.key });
    assertProblem(res, 404, 'sandbox_not_found');
    assert.equal(res.headers.get('x-ratelimit-limit'), String(capacity));
    seen.push(Number(res.headers.get('x-ratelimit-remaining')));
  }
  const refills = Math.floor((Date.now() - started) / refillMs) + 1;
  assert.equal(seen[0], capacity - 1);
  const notDown = seen.slice(1).filter((n, i) => n !== seen[i]! - 1).length;
  assert.ok(notDown <= refills, `${notDown} counts not one down, with at most ${refills} tokens refilled: ${seen.join(',')}`);
  const refused = await call(webs[seen.length % webs.length]!, 'POST', '/v1/sandboxes', { token: a.key, body: {} });
  assertProblem(refused, 429, 'rate_limited');
  assert.equal(refused.body.bucket, 'sandbox_lifecycle');
  const refill = Math.ceil(60 / capacity);
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfter >= refill - 2 && retryAfter <= refill, `Retry-After ${retryAfter}, one token every ${refill} s`);
  // Nothing was created by the refused request.
  assert.deepEqual((await call(webs[0]!, 'GET', '/v1/sandboxes?state=all', { token: a.key })).body.data, []);
}

/**
 * Signup and login from one client address (X-Forwarded-For, PADDOCK_TRUST_PROXY=true), racing
 * across the webs: one per-IP bucket for all of them, exactly `capacity` pass.
 */
export async function authBucketRaceScenario(webs: string[], capacity: number): Promise<void> {
  const address = `203.0.113.${1 + Math.floor(Math.random() * 250)}`;
  const headers = { 'x-forwarded-for': address };
  const results = await Promise.all(
    Array.from({ length: capacity * 3 }, (_, i) =>
      i % 2
        ? call(webs[i % webs.length]!, 'POST', '/v1/auth/signup', { headers, body: { email: uniqueEmail('ip-race'), password: 'correct horse battery' } })
        : call(webs[i % webs.length]!, 'POST', '/v1/auth/login', { headers, body: { email: uniqueEmail('ip-race'), password: 'wrong password' } }),
    ),
  );
  const passed = results.filter((r) => r.status !== 429);
  assert.equal(passed.length, capacity, results.map((r) => r.status).join(','));
  for (const r of passed) assert.ok(r.status === 201 || r.status === 401, `${r.status} ${JSON.stringify(r.body)}`);
  for (const r of results.filter((x) => x.status === 429)) {
    assertProblem(r, 429, 'rate_limited');
    assert.equal(r.body.bucket, 'auth');
  }
}
