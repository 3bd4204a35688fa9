import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ANY_MEDIA_TYPE } from '../../api/middleware/body.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { rawExchange, rawRequest } from '../helpers/raw-http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { craftJwt } from '../helpers/auth-suite.ts';
import { credentialFor, routeKey, routesWhere, sendValid, Workspace } from './fixtures.ts';

// OWASP API4:2023 Unrestricted Resource Consumption: what one client can make the service spend
// is bounded, on every route. Swept from the route list here: the body limit of every route
// that reads a body, and the rate limit of every bucketed route. Spot checks of the quota, the
// exec output cap and timeout, the file size limit and the server's receive timeouts. The
// detailed behaviour of each is tested where it lives: test/api/bad-input.test.ts (body limits,
// nesting, huge fields), test/api/rate-limit.test.ts (buckets across replicas, Retry-After),
// test/sandboxes/quotas.test.ts, test/exec/exec.test.ts (output cap, timeouts),
// test/files/limits.test.ts, test/runtime/local-isolation.test.ts (memory and pids limits).

// Each bucketed route takes two requests of one account (or, for the auth routes, of this IP) below.
const LIMITS = { ops: 4, lifecycle: 2, auth: 6, account: 6 };
const stack = await startSandboxStack({
  overrides: {
    PADDOCK_BODY_LIMIT_BYTES: '2048',
    PADDOCK_FILE_MAX_BYTES: '4096',
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: String(LIMITS.ops),
    PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: String(LIMITS.lifecycle),
    PADDOCK_RATE_AUTH_PER_MIN: String(LIMITS.auth),
    PADDOCK_RATE_ACCOUNT_PER_MIN: String(LIMITS.account),
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '1',
    PADDOCK_EXEC_TIMEOUT_MAX_SECONDS: '2',
    PADDOCK_EXEC_OUTPUT_MAX_BYTES: '1024',
  },
});
const api = stack.apis[0]!;
// Accounts are made through another deployment (same database, its own buckets), so that signing
// up takes nothing from this stack's small auth bucket.
const signups = await startTestApi();
const fresh = async (label: string) => {
  const account = await newAccount(signups.url, label);
  // Its session token is the other deployment's: one signed with this one's secret instead.
  return { ...account, token: craftJwt(api, account.id) };
};
const limitOf = (bucket: string) =>
  ({ sandbox_ops: LIMITS.ops, sandbox_lifecycle: LIMITS.lifecycle, auth: LIMITS.auth, account: LIMITS.account })[bucket]!;

const readsBody = routesWhere((r) => !r.spec.streamedBody && (['post', 'put', 'patch'].includes(r.spec.method) || r.spec.body !== undefined));
const streamsBody = routesWhere((r) => r.spec.streamedBody !== undefined);

test('every route that reads a body: one byte over its limit answers 413 payload_too_large, at the limit it is read', async () => {
  assert.ok(readsBody.length >= 9);
  for (const route of readsBody) {
    const limit = route.spec.bodyLimitBytes?.(api.deps.config) ?? api.deps.config.PADDOCK_BODY_LIMIT_BYTES;
    const account = await fresh('bodylimit');
    const path = route.spec.path.replace(/:id/, `sbx_${'0'.repeat(24)}`).replace(/:(\w+)/g, 'x');
    // A route with one large member (exec's stdin) allows its limit to that member only.
    const field = route.spec.bodyLargeField ?? 'pad';
    const padded = (size: number) => {
      const base = JSON.stringify({ [field]: '' });
      return JSON.stringify({ [field]: 'p'.repeat(size - base.length) });
    };
    const token = credentialFor(route, account);
    const send = (body: string) =>
      rawRequest(stack.url, route.spec.method.toUpperCase(), path, {
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body,
      });
    const over = await send(padded(limit + 1));
    assertProblem(over, 413, 'payload_too_large');
    assert.equal(over.body.limitBytes, limit, routeKey(route));
    const at = await send(padded(limit));
    assert.notEqual(at.status, 413, `${routeKey(route)}: a body of exactly ${limit} bytes`);
    assert.ok(at.status < 500, `${routeKey(route)}: ${at.status}`);
  }
});

test('every route that streams its body: one declared byte over its limit, or one counted, answers 413 before anything is done', async () => {
  assert.ok(streamsBody.length >= 1);
  for (const route of streamsBody) {
    const limit = route.spec.streamedBody!.limitBytes(api.deps.config);
    const account = await fresh('streamlimit');
    const path = route.spec.path.replace(/:id/, `sbx_${'0'.repeat(24)}`).replace(/:(\w+)/g, 'x');
    const headers = { 'content-type': route.spec.streamedBody!.mediaTypes[0]!, authorization: `Bearer ${credentialFor(route, account)}` };
    // Declared: refused on the header alone, before the sandbox is looked up.
    const [declared] = await rawExchange(
      stack.url,
      `${route.spec.method.toUpperCase()} ${path} HTTP/1.1\r\nHost: x\r\ncontent-type: ${headers['content-type']}\r\nauthorization: ${headers.authorization}\r\ncontent-length: ${limit + 1}\r\n\r\n`,
    );
    assertProblem(declared!, 413, 'payload_too_large');
    assert.equal(declared!.body.limitBytes, limit, routeKey(route));
    // Of another media type: 415, whatever its size (a raw upload takes bytes of any type).
    if (route.spec.streamedBody!.mediaTypes.includes(ANY_MEDIA_TYPE)) continue;
    const json = await rawRequest(stack.url, route.spec.method.toUpperCase(), path, { headers: { ...headers, 'content-type': 'application/json' }, body: '{}' });
    assertProblem(json, 415, 'unsupported_media_type');
  }
});

test('a route with one large member: the other members together past the default limit answer 413 before parsing', async () => {
  const large = routesWhere((r) => r.spec.bodyLargeField !== undefined);
  assert.ok(large.length >= 1);
  const other = api.deps.config.PADDOCK_BODY_LIMIT_BYTES;
  for (const route of large) {
    const account = await fresh('largefield');
    const path = route.spec.path.replace(/:id/, `sbx_${'0'.repeat(24)}`).replace(/:(\w+)/g, 'x');
    const field = route.spec.bodyLargeField!;
    const send = (body: unknown) =>
      rawRequest(stack.url, route.spec.method.toUpperCase(), path, {
        headers: { 'content-type': 'application/json', authorization: `Bearer ${credentialFor(route, account)}` },
        body: JSON.stringify(body),
      });
    // The large member itself may pass the default limit; an env, a key or an argv may not,
    // wherever they sit around it (the member's own bytes end at its comma).
    const big = 'v'.repeat(other + 1);
    for (const body of [
      { [field]: 'x', env: { A: big } },
      { env: { A: big }, [field]: 'x' },
      { [field]: 'x', [big]: 1 },
      { [field]: 'x', command: Array.from({ length: 40 }, () => 'a'.repeat(Math.ceil(other / 40) + 1)) },
    ]) {
      const res = await send(body);
      assertProblem(res, 413, 'payload_too_large');
      assert.equal(res.body.limitBytes, other, routeKey(route));
    }
    const fine = await send({ [field]: big, command: 'true' });
    assert.notEqual(fine.status, 413, `${routeKey(route)}: ${JSON.stringify(fine.body)}`);
    assert.ok(fine.status < 500, routeKey(route));
  }
});

test('every bucketed route answers 429 rate_limited with Retry-After once its bucket is empty', async () => {
  const bucketed = routesWhere((r) => r.spec.bucket !== undefined);
  assert.ok(bucketed.length >= 10);
  for (const route of bucketed) {
    const bucket = route.spec.bucket!;
    const limit = limitOf(bucket);
    const w = new Workspace(stack.url, await fresh('ratelimit'));
    let refused;
    let served = 0;
    // Making the route's target may take tokens of the same bucket: the 429 comes no later.
    for (let i = 0; i <= limit && !refused; i++) {
      const res = await sendValid(route, w).catch((err: Error) => ({ status: 0, headers: new Headers(), body: err.message }));
      if (res.status === 429 && res.body?.code === 'rate_limited') refused = res;
      else {
        // (A create past the concurrent quota of 1 is refused by the quota, after taking its token.)
        const quota = res.body?.code === 'concurrent_sandbox_limit_reached';
        // A WebSocket route's success is its 101 (the suite's client drops the connection at once).
        const upgraded = route.spec.websocket !== undefined && res.status === 101;
        assert.ok((res.status >= 200 && res.status < 300) || quota || upgraded, `${routeKey(route)}: ${res.status} ${JSON.stringify(res.body)}`);
        served++;
        assert.equal(res.headers.get('x-ratelimit-limit'), String(limit), routeKey(route));
        assert.match(res.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/, routeKey(route));
      }
    }
    assert.ok(refused, `${routeKey(route)}: no 429 after ${limit + 1} requests`);
    assertProblem(refused, 429, 'rate_limited');
    assert.equal(refused.body.bucket, bucket);
    assert.match(refused.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    assert.ok(served <= limit, `${routeKey(route)}: ${served} served with a limit of ${limit}`);
  }
  // Signup and login: one bucket per client IP.
  for (let i = 0; i < LIMITS.auth; i++) await call(stack.url, 'POST', '/v1/auth/login', { body: { email: 'x@example.test', password: 'x' } });
  assertProblem(await call(stack.url, 'POST', '/v1/auth/login', { body: { email: 'x@example.test', password: 'x' } }), 429, 'rate_limited');
});

test('routes without a bucket (reading sandboxes) are not rate limited, and carry no rate-limit headers', async () => {
  const account = await fresh('unbucketed');
  for (let i = 0; i < 3 * LIMITS.ops; i++) {
    const res = await call(stack.url, 'GET', '/v1/sandboxes', { token: account.key });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-ratelimit-limit'), null);
  }
});

test('the concurrent quota refuses a second sandbox before creating anything', async () => {
  const account = await fresh('quota');
  assert.equal((await call(stack.url, 'POST', '/v1/sandboxes?wait=false', { token: account.key, body: {} })).status, 201);
  const refused = await call(stack.url, 'POST', '/v1/sandboxes?wait=false', { token: account.key, body: {} });
  assertProblem(refused, 429, 'concurrent_sandbox_limit_reached');
  const all = await call(stack.url, 'GET', '/v1/sandboxes?state=all', { token: account.key });
  assert.equal(all.body.data.length, 1);
});

test('exec output is capped, a timeout above the maximum is refused, a command past its timeout is killed; files are capped', async () => {
  // PADDOCK_EXEC_TIMEOUT_MAX_SECONDS is 2 here, below the default of 60: an exec that sends no
  // timeout runs under the maximum rather than being refused for a timeout it did not send.
  const w = new Workspace(stack.url, await fresh('caps'));
  const id = await w.sandboxId(); // (one sandbox_ops token: the notes file)
  const exec = (body: unknown) => call(stack.url, 'POST', `/v1/sandboxes/${id}/exec`, { token: w.owner.key, body });
  // Past the cap, but by less than the margin after which a flood is stopped: the timeout ends it.
  const big = await exec({ command: 'head -c 30000 /dev/zero | tr "\\0" x; sleep 30', timeoutSeconds: 1 });
  assert.equal(big.status, 200, JSON.stringify(big.body));
  assert.equal(big.body.stdoutTruncated, true);
  assert.ok(Buffer.byteLength(big.body.stdout) <= 1024, `${Buffer.byteLength(big.body.stdout)} bytes of output`);
  assert.equal(big.body.timedOut, true);
  assert.ok(big.body.durationMs < 10_000, `ran ${big.body.durationMs} ms`);
  const tooLong = await exec({ command: 'true', timeoutSeconds: 3 });
  assertProblem(tooLong, 400, 'invalid_request');
  assert.match(tooLong.body.detail, /timeoutSeconds/);
  const defaulted = await exec({ command: 'sleep 5', timeoutSeconds: undefined });
  assert.equal(defaulted.status, 200, JSON.stringify(defaulted.body));
  assert.equal(defaulted.body.timedOut, true, 'killed at the 2 s maximum');
  // The bucket (4) is used up by now: a bound of its own. It gains a token every 15 s, which a
  // loaded host may take for the calls above: that buys one call more, never two.
  let refused = await exec({ command: 'true' });
  if (refused.status === 200) refused = await exec({ command: 'true' });
  assertProblem(refused, 429, 'rate_limited');

  const files = new Workspace(stack.url, await fresh('filecap'));
  const fid = await files.sandboxId();
  const put = await call(stack.url, 'PUT', `/v1/sandboxes/${fid}/files?path=big.txt`, { token: files.owner.key, body: { content: 'x'.repeat(4097) } });
  assertProblem(put, 413, 'file_too_large');
});

test('lists are bounded: ?limit above 1000 is refused', async () => {
  const account = await fresh('lists');
  assertProblem(await call(stack.url, 'GET', '/v1/sandboxes?limit=1001', { token: account.key }), 400, 'invalid_request');
  assert.equal((await call(stack.url, 'GET', '/v1/sandboxes?limit=1000', { token: account.key })).status, 200);
});

test('the server bounds how long receiving a request may take, and the size of its headers', () => {
  const server = api.server;
  assert.ok(server.headersTimeout > 0 && server.headersTimeout <= 120_000, `headersTimeout ${server.headersTimeout}`);
  assert.ok(server.requestTimeout > 0 && server.requestTimeout <= 600_000, `requestTimeout ${server.requestTimeout}`);
  assert.ok(server.keepAliveTimeout > 0, `keepAliveTimeout ${server.keepAliveTimeout}`);
  assert.ok((server.maxHeadersCount ?? 2000) <= 2000);
});
