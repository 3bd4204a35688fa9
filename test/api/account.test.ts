import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { runAuthSuite } from '../helpers/auth-suite.ts';

test('GET /v1/account answers the account, its limits and the current UTC month', async () => {
  const api = await startTestApi({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '3', PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS: '7.5' } });
  const account = await newAccount(api.url);
  const res = await call(api.url, 'GET', '/v1/account', { token: account.key });
  assert.equal(res.status, 200);
  assert.equal(res.body.id, account.id);
  assert.equal(res.body.email, account.email);
  assert.deepEqual(res.body.usage, {
    sandboxHours: { used: 0, limit: 7.5 },
    concurrentSandboxes: { active: 0, limit: 3 },
    snapshotStorage: { usedBytes: 0, limitBytes: 5 * 1024 * 1024 * 1024 },
  });
  const now = new Date();
  assert.equal(res.body.period.start, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
  assert.equal(res.body.period.end, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
});

test('GET /v1/account is kept as a view for PADDOCK_READ_CACHE_SECONDS: a hand edit of the account shows once it expires; 0 keeps none', async () => {
  const [kept, none] = await Promise.all([
    startTestApi({ overrides: { PADDOCK_READ_CACHE_SECONDS: '1' } }),
    startTestApi({ overrides: { PADDOCK_READ_CACHE_SECONDS: '0' } }),
  ]);
  for (const [api, keeps] of [[kept, true], [none, false]] as const) {
    const account = await newAccount(api.url, keeps ? 'view-kept' : 'view-none');
    assert.equal((await call(api.url, 'GET', '/v1/account', { token: account.key })).body.email, account.email);
    await api.deps.pg.query('update accounts set concurrent_sandboxes_limit = 4 where id = $1', [account.id]);
    const soon = await call(api.url, 'GET', '/v1/account', { token: account.key });
    assert.equal(soon.body.usage.concurrentSandboxes.limit, keeps ? 2 : 4);
    if (!keeps) continue;
    await sleep(1100);
    assert.equal((await call(api.url, 'GET', '/v1/account', { token: account.key })).body.usage.concurrentSandboxes.limit, 4);
  }
});

// One stack for the rest of the file, closed when the file ends.
const api = await startTestApi();

describe('GET /v1/account', () => {
  runAuthSuite({ api, method: 'GET', path: '/v1/account', credential: 'apiKey', okStatus: 200 });

  test('answers exactly the documented fields, for the account the key belongs to', async () => {
    const [a, b] = await Promise.all([newAccount(api.url, 'acct-a'), newAccount(api.url, 'acct-b')]);
    const resA = await call(api.url, 'GET', '/v1/account', { token: a.key });
    const resB = await call(api.url, 'GET', '/v1/account', { token: b.key });
    assert.equal(resA.status, 200);
    assert.deepEqual(Object.keys(resA.body).sort(), ['email', 'id', 'period', 'usage']);
    assert.equal(resA.body.id, a.id);
    assert.equal(resB.body.id, b.id);
    assert.equal(resB.body.email, b.email);
    // The defaults of the free tier.
    assert.deepEqual(resA.body.usage, { sandboxHours: { used: 0, limit: 20 }, concurrentSandboxes: { active: 0, limit: 2 }, snapshotStorage: { usedBytes: 0, limitBytes: 5 * 1024 * 1024 * 1024 } });
    assert.equal(JSON.stringify(resA.body).includes('password'), false);
  });

  test('a per-account override of a limit wins over the default', async () => {
    const account = await newAccount(api.url, 'override');
    await api.deps.orm.em
      .getConnection()
      .execute('update accounts set concurrent_sandboxes_limit = 5, monthly_sandbox_hours_limit = 1.5 where id = ?', [account.id]);
    const res = await call(api.url, 'GET', '/v1/account', { token: account.key });
    assert.equal(res.status, 200);
    assert.equal(res.body.usage.concurrentSandboxes.limit, 5);
    assert.equal(res.body.usage.sandboxHours.limit, 1.5);
  });

  test('a key whose account is gone answers 401 invalid_credential, not 500', async () => {
    const account = await newAccount(api.url, 'gone');
    // The key's row goes with the account (on delete cascade); a cached lookup may still name it.
    assert.equal((await call(api.url, 'GET', '/v1/account', { token: account.key })).status, 200);
    await api.deps.orm.em.getConnection().execute('delete from accounts where id = ?', [account.id]);
    // No writer announces a hand edit: its views expire (PADDOCK_READ_CACHE_SECONDS) or are marked stale.
    await api.deps.views.changed([account.id]);
    assertProblem(await call(api.url, 'GET', '/v1/account', { token: account.key }), 401, 'invalid_credential');
  });

  test('unknown query parameters answer 400 naming them; a body-less POST answers 405', async () => {
    const account = await newAccount(api.url, 'strict');
    const res = await call(api.url, 'GET', '/v1/account?expand=usage', { token: account.key });
    assertProblem(res, 400, 'invalid_request');
    assert.equal(res.body.errors[0].field, 'expand');
    assert.equal(res.body.errors[0].location, 'query');
    const post = await call(api.url, 'POST', '/v1/account', { token: account.key, body: {} });
    assertProblem(post, 405, 'method_not_allowed');
    assert.match(post.headers.get('allow') ?? '', /\bGET\b/);
  });
});
