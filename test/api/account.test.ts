import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';

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
  });
  const now = new Date();
  assert.equal(res.body.period.start, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
  assert.equal(res.body.period.end, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
});
