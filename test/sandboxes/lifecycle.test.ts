import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testRuntime } from '../helpers/sandbox-stack.ts';
import { startDeployment } from '../helpers/deployment.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount as createAccount, type TestAccount } from '../helpers/accounts.ts';
import { assertEventsMatchTransitions } from '../helpers/events.ts';
import { eventually } from '../helpers/eventually.ts';
import { newId } from '../../shared/ids.ts';
import { PaddockClient } from '../../shared/sdk/index.ts';
import { createSandbox, waitForSandbox } from '../helpers/sandboxes.ts';

// In-process, or through two webs and two workers (PADDOCK_TEST_DEPLOYMENT=replicas).
const stack = await startDeployment({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });
const runtime = () => stack.runtime;
// Every account the suite makes, for the last test: the events of all their sandboxes.
const accounts: string[] = [];
async function newAccount(url: string): Promise<TestAccount> {
  const a = await createAccount(url);
  accounts.push(a.id);
  return a;
}

test('create answers a running sandbox with every field of the contract', async () => {
  const a = await newAccount(stack.url);
  const res = await createSandbox(stack.url, a.key, '', { metadata: { purpose: 'lifecycle' } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const s = res.body;
  assert.match(s.id, /^sbx_[0-9a-z]{24}$/);
  assert.equal(res.headers.get('location'), `/v1/sandboxes/${s.id}`);
  assert.equal(s.state, 'active');
  assert.equal(s.status, 'running');
  // What runs: the operator's default image on Kubernetes, the host's own userland locally.
  assert.equal(s.image, testRuntime() === 'local' ? 'host' : stack.config.PADDOCK_KUBE_DEFAULT_IMAGE);
  assert.deepEqual(s.metadata, { purpose: 'lifecycle' });
  assert.equal(s.destroyedAt, null);
  assert.equal(s.destroyReason, null);
  assert.ok(Date.parse(s.readyAt) >= Date.parse(s.createdAt));
  assert.equal(Date.parse(s.expiresAt) - Date.parse(s.createdAt), stack.config.PADDOCK_SESSION_CAP_SECONDS * 1000);
  assert.equal((await runtime().get(s.id))?.status, 'running');

  const got = await call(stack.url, 'GET', `/v1/sandboxes/${s.id}`, { token: a.key });
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, s);
});

test('destroy answers the destroyed sandbox, removes it from the runtime, and is idempotent', async () => {
  const a = await newAccount(stack.url);
  const { body: s } = await createSandbox(stack.url, a.key);
  const del = await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
  assert.equal(del.status, 200, JSON.stringify(del.body));
  assert.equal(del.body.state, 'destroyed');
  assert.equal(del.body.status, 'terminated');
  assert.equal(del.body.destroyReason, 'user');
  assert.ok(Date.parse(del.body.destroyedAt) >= Date.parse(s.readyAt));
  const held = await runtime().get(s.id);
  assert.ok(held === undefined || held.status === 'terminated', `runtime still holds ${JSON.stringify(held)}`);

  const again = await call(stack.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, del.body);
});

test('list filters by state and answers newest first', async () => {
  const a = await newAccount(stack.url);
  const first = (await createSandbox(stack.url, a.key)).body;
  const second = (await createSandbox(stack.url, a.key)).body;
  await call(stack.url, 'DELETE', `/v1/sandboxes/${first.id}`, { token: a.key });
  const ids = async (q: string) => (await call(stack.url, 'GET', `/v1/sandboxes${q}`, { token: a.key })).body.data.map((s: any) => s.id);
  assert.deepEqual(await ids(''), [second.id]);
  assert.deepEqual(await ids('?state=active'), [second.id]);
  assert.deepEqual(await ids('?state=destroyed'), [first.id]);
  assert.deepEqual(await ids('?state=all'), [second.id, first.id]);
  assertProblem(await call(stack.url, 'GET', '/v1/sandboxes?state=gone', { token: a.key }), 400, 'invalid_request');
});

test('the list pages through any number of sandboxes by ?after=, newest first, ties in a stable order', async () => {
  // Rows only (no runtime sandbox behind them, and not among the accounts whose events the last
  // test checks): 25 sandboxes, several created in the same microsecond.
  const a = await createAccount(stack.url);
  const other = await createAccount(stack.url);
  const base = Date.now() - 60_000;
  const rows = Array.from({ length: 25 }, (_, i) => ({ id: newId('sbx'), createdAt: new Date(base + Math.floor(i / 3) * 1000), state: i % 4 === 0 ? 'active' : 'destroyed' }));
  for (const r of rows) {
    await stack.sql(
      `insert into sandboxes (id, account_id, state, status, image, created_at, expires_at, destroyed_at, destroy_reason)
       values ($1, $2, $3, $4, 'test', $5, $5::timestamptz + interval '30 minutes',
               case when $3 = 'destroyed' then $5::timestamptz + interval '1 minute' end, case when $3 = 'destroyed' then 'user' end)`,
      [r.id, a.id, r.state, r.state === 'active' ? 'running' : 'terminated', r.createdAt],
    );
  }
  const expected = (state: string) =>
    rows
      .filter((r) => state === 'all' || r.state === state)
      .sort((x, y) => y.createdAt.getTime() - x.createdAt.getTime() || (x.id < y.id ? 1 : -1))
      .map((r) => r.id);
  for (const state of ['all', 'active', 'destroyed']) {
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 30; page++) {
      const q: string = `?state=${state}&limit=4${after ? `&after=${after}` : ''}`;
      const res = await call(stack.url, 'GET', `/v1/sandboxes${q}`, { token: a.key });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok(res.body.data.length <= 4);
      seen.push(...res.body.data.map((s: any) => s.id));
      after = res.body.next;
      if (after === null) break;
      assert.equal(after, res.body.data.at(-1).id);
    }
    assert.deepEqual(seen, expected(state), `state=${state}`);
  }
  // The SDK's iterator walks the same pages.
  const viaSdk: string[] = [];
  for await (const sandbox of new PaddockClient({ baseUrl: stack.url, apiKey: a.key }).sandboxes('all', { pageSize: 4 })) viaSdk.push(sandbox.id);
  assert.deepEqual(viaSdk, expected('all'));
  // The last page says so even when it is full.
  const exact = await call(stack.url, 'GET', `/v1/sandboxes?state=all&limit=25`, { token: a.key });
  assert.equal(exact.body.data.length, 25);
  assert.equal(exact.body.next, null);
  // A cursor that is not the caller's own sandbox answers 404, never an empty "last" page.
  const theirs = (await call(stack.url, 'GET', '/v1/sandboxes?state=all&limit=1', { token: a.key })).body.data[0].id;
  assertProblem(await call(stack.url, 'GET', `/v1/sandboxes?state=all&after=${theirs}`, { token: other.key }), 404, 'sandbox_not_found');
  assertProblem(await call(stack.url, 'GET', `/v1/sandboxes?after=sbx_${'0'.repeat(24)}`, { token: a.key }), 404, 'sandbox_not_found');
  assertProblem(await call(stack.url, 'GET', `/v1/sandboxes?after=${encodeURIComponent("x' or 1=1")}`, { token: a.key }), 404, 'sandbox_not_found');
});

test('?wait=false answers pending at once, and the sandbox then runs; delete ?wait=false answers terminating', async () => {
  const a = await newAccount(stack.url);
  const res = await createSandbox(stack.url, a.key, '?wait=false');
  assert.equal(res.status, 201);
  assert.equal(res.body.status, 'pending');
  assert.equal(res.body.readyAt, null);
  const running = await waitForSandbox(stack.url, a.key, res.body.id, (s) => s.status === 'running');
  assert.ok(running.readyAt);
  const del = await call(stack.url, 'DELETE', `/v1/sandboxes/${res.body.id}?wait=false`, { token: a.key });
  assert.equal(del.status, 200);
  assert.ok(['terminating', 'terminated'].includes(del.body.status), del.body.status);
  const gone = await waitForSandbox(stack.url, a.key, res.body.id, (s) => s.state === 'destroyed');
  assert.equal(gone.destroyReason, 'user');
});

test("another account's sandbox answers 404 exactly like a missing one", async () => {
  const owner = await newAccount(stack.url);
  const other = await newAccount(stack.url);
  const { body: s } = await createSandbox(stack.url, owner.key);
  for (const method of ['GET', 'DELETE']) {
    const theirs = await call(stack.url, method, `/v1/sandboxes/${s.id}`, { token: other.key });
    const missing = await call(stack.url, method, `/v1/sandboxes/sbx_${'0'.repeat(24)}`, { token: other.key });
    assertProblem(theirs, 404, 'sandbox_not_found');
    assertProblem(missing, 404, 'sandbox_not_found');
    assert.equal(theirs.body.title, missing.body.title);
  }
  const list = await call(stack.url, 'GET', '/v1/sandboxes?state=all', { token: other.key });
  assert.deepEqual(list.body.data, []);
  assert.equal((await call(stack.url, 'GET', `/v1/sandboxes/${s.id}`, { token: owner.key })).body.state, 'active');
});

test('an image the operator does not allow is refused before anything is created', async () => {
  const a = await newAccount(stack.url);
  const res = await createSandbox(stack.url, a.key, '', { image: 'evil.example/miner:latest' });
  // The local runtime runs no container image at all: refused as unsupported, before the list.
  assertProblem(res, 422, testRuntime() === 'local' ? 'image_not_supported' : 'image_not_allowed');
  assert.match(res.body.detail, /evil\.example\/miner:latest/);
  const list = await call(stack.url, 'GET', '/v1/sandboxes?state=all', { token: a.key });
  assert.deepEqual(list.body.data, []);
});

if (testRuntime() === 'local') {
  test('the local runtime reports the userland it runs, and refuses every container image instead of ignoring it', async () => {
    const a = await newAccount(stack.url);
    // Even the Kubernetes default and an image on the operator's list: the local runtime cannot run them.
    for (const image of [stack.config.PADDOCK_KUBE_DEFAULT_IMAGE, 'docker.io/library/python:3.12-slim']) {
      const refused = await createSandbox(stack.url, a.key, '?wait=false', { image });
      assertProblem(refused, 422, 'image_not_supported');
      assert.match(refused.body.detail, /host/);
    }
    assert.deepEqual((await call(stack.url, 'GET', '/v1/sandboxes?state=all', { token: a.key })).body.data, []);
    // Asked for by the name it reports, it runs.
    const named = await createSandbox(stack.url, a.key, '', { image: 'host' });
    assert.equal(named.status, 201, JSON.stringify(named.body));
    assert.equal(named.body.status, 'running');
    assert.equal(named.body.image, 'host');
    assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${named.body.id}`, { token: a.key })).status, 200);
  });
} else {
  test('a Kubernetes sandbox reports the image it runs: the default, or the listed one it asked for', async () => {
    const a = await newAccount(stack.url);
    const listed = await createSandbox(stack.url, a.key, '?wait=false', { image: 'docker.io/library/python:3.12-slim' });
    assert.equal(listed.status, 201, JSON.stringify(listed.body));
    assert.equal(listed.body.image, 'docker.io/library/python:3.12-slim');
    assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${listed.body.id}?wait=false`, { token: a.key })).status, 200);
  });
}

test('bad create bodies are refused with invalid_request naming the field', async () => {
  const a = await newAccount(stack.url);
  for (const [body, field] of [
    [{ env: { '1BAD': 'x' } }, 'env'],
    [{ metadata: { k: 5 } }, 'metadata'],
    [{ image: '' }, 'image'],
    [{ size: 'xl' }, 'size'],
  ] as const) {
    const res = await createSandbox(stack.url, a.key, '', body);
    assertProblem(res, 400, 'invalid_request');
    assert.match(res.body.detail, new RegExp(field));
  }
});

if (testRuntime() === 'kubernetes') {
  test('an image that cannot start fails the sandbox with a reason and frees the quota', async () => {
    const a = await newAccount(stack.url);
    const res = await createSandbox(stack.url, a.key, '', { image: 'registry.example/does-not-exist:1' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.state, 'destroyed');
    assert.equal(res.body.status, 'failed');
    assert.equal(res.body.destroyReason, 'failed');
    assert.match(res.body.failureMessage, /ErrImagePull|ImagePullBackOff|pull/i);
    const account = await call(stack.url, 'GET', '/v1/account', { token: a.key });
    assert.equal(account.body.usage.concurrentSandboxes.active, 0);
    assert.equal(account.body.usage.sandboxHours.used, 0);
  });
}

test('last: every sandbox of this suite has exactly the events of its transitions, in order', async () => {
  await eventually('every sandbox settled', 30_000, async () => {
    const rows = (await stack.sql("select id from sandboxes where account_id = any($1) and state = 'active' and status <> 'running'", [accounts])) as unknown[];
    return rows.length === 0 ? true : undefined;
  });
  const checked = await assertEventsMatchTransitions(stack.sql, { accountIds: accounts });
  assert.ok(checked >= 5, `${checked} sandboxes checked`);
});
