import assert from 'node:assert/strict';
import { call, type JsonResponse } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

// The key scenarios of the lifecycle, quota and rate-limit suites as functions of a base URL, so
// any deployment shape (one in-process API, several real processes behind a proxy) runs them
// unchanged. Each makes its own account, so they can share a stack.

const MISSING_SANDBOX = `sbx_${'0'.repeat(24)}`;

/** Create (waiting), get, list, destroy (idempotent), list again. */
export async function lifecycleScenario(url: string, capSeconds: number): Promise<void> {
  const a = await newAccount(url, 'lifecycle');
  const res = await createSandbox(url, a.key, '', { metadata: { purpose: 'replicas' } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const s = res.body;
  assert.match(s.id, /^sbx_[0-9a-z]{24}$/);
  assert.equal(res.headers.get('location'), `/v1/sandboxes/${s.id}`);
  assert.equal(s.state, 'active');
  assert.equal(s.status, 'running');
  assert.deepEqual(s.metadata, { purpose: 'replicas' });
  assert.ok(Date.parse(s.readyAt) >= Date.parse(s.createdAt));
  assert.equal(Date.parse(s.expiresAt) - Date.parse(s.createdAt), capSeconds * 1000);

  const got = await call(url, 'GET', `/v1/sandboxes/${s.id}`, { token: a.key });
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, s);

  const second = (await createSandbox(url, a.key, '?wait=false')).body;
  assert.equal(second.status, 'pending');
  const ids = async (q: string) => (await call(url, 'GET', `/v1/sandboxes${q}`, { token: a.key })).body.data.map((x: any) => x.id);
  assert.deepEqual(await ids(''), [second.id, s.id]);

  const del = await call(url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
  assert.equal(del.status, 200, JSON.stringify(del.body));
  assert.equal(del.body.state, 'destroyed');
  assert.equal(del.body.status, 'terminated');
  assert.equal(del.body.destroyReason, 'user');
  const again = await call(url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, del.body);

  assert.deepEqual(await ids(''), [second.id]);
  assert.deepEqual(await ids('?state=destroyed'), [s.id]);
  assert.deepEqual(await ids('?state=all'), [second.id, s.id]);
  const gone = await call(url, 'DELETE', `/v1/sandboxes/${second.id}`, { token: a.key });
  assert.equal(gone.body.state, 'destroyed');

  const other = await newAccount(url, 'other');
  assertProblem(await call(url, 'GET', `/v1/sandboxes/${s.id}`, { token: other.key }), 404, 'sandbox_not_found');
}

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
