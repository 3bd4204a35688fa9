import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';

// One account storing secrets without end (issue 13: 4,897 secrets of 32 KiB in 15 s, then every
// exec failed): count and bytes are capped per account and per sandbox, exactly, also under
// concurrent requests, and replacing a secret at the cap still works.

const api = await startTestApi({
  overrides: { PADDOCK_SECRETS_MAX_PER_ACCOUNT: '5', PADDOCK_SECRETS_MAX_BYTES_PER_ACCOUNT: '8192' },
});

const put = (key: string, name: string, value: string) => call(api.url, 'POST', '/v1/secrets', { token: key, body: { name, value } });

test('the count per account is a hard cap, exact under concurrent requests; a replacement at the cap is fine', async () => {
  const account = await newAccount(api.url, 'seccount');
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => put(account.key, `S_${i}`, `value-${i}-xxxx`)));
  assert.equal(answers.filter((a) => a.status === 201).length, 5);
  for (const refused of answers.filter((a) => a.status !== 201)) assertProblem(refused, 422, 'secret_limit_reached');
  const list = await call(api.url, 'GET', '/v1/secrets', { token: account.key });
  assert.equal(list.body.data.length, 5);
  const kept = list.body.data[0].name as string;
  assert.equal((await put(account.key, kept, 'a-new-value-here')).status, 200);
  assert.equal((await call(api.url, 'DELETE', `/v1/secrets/${kept}`, { token: account.key })).status, 204);
  assert.equal((await put(account.key, 'S_AFTER', 'fits-again')).status, 201);
});

test('the bytes per account are capped, and other accounts are unaffected', async () => {
  const [hog, neighbour] = await Promise.all([newAccount(api.url, 'secbytes'), newAccount(api.url, 'secneighbour')]);
  assert.equal((await put(hog.key, 'BIG_1', 'x'.repeat(5000))).status, 201);
  assertProblem(await put(hog.key, 'BIG_2', 'y'.repeat(5000)), 422, 'secret_limit_reached');
  assert.equal((await put(neighbour.key, 'BIG_1', 'z'.repeat(5000))).status, 201);
});

test('a value too short to be masked in output is refused, naming the rule; four bytes are enough', async () => {
  const account = await newAccount(api.url, 'secshort');
  for (const value of ['x', 'ab', 'abc']) {
    const refused = await put(account.key, 'SHORT', value);
    assertProblem(refused, 400, 'invalid_request');
    assert.match(refused.body.detail, /value.*at least 4 bytes/);
  }
  // Bytes, not characters: two two-byte characters pass.
  assert.equal((await put(account.key, 'SHORT', 'éé')).status, 201);
  assert.equal((await call(api.url, 'GET', '/v1/secrets', { token: account.key })).body.data.length, 1);
});
