import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { craftJwt, runAuthSuite, runTenantCheck } from '../helpers/auth-suite.ts';

const api = await startTestApi();
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const createKey = (account: TestAccount, body: unknown = { name: 'k' }) =>
  call(api.url, 'POST', '/v1/api-keys', { token: account.token, body });
const listKeys = (account: TestAccount) => call(api.url, 'GET', '/v1/api-keys', { token: account.token });
const revokeKey = (account: TestAccount, id: string) => call(api.url, 'DELETE', `/v1/api-keys/${id}`, { token: account.token });
const whoami = (key: string) => call(api.url, 'GET', '/v1/account', { token: key });
const missingKeyId = () => `key_${randomBytes(12).toString('hex')}`;

runAuthSuite({ api, method: 'POST', path: '/v1/api-keys', credential: 'dashboard', body: { name: 'suite' }, okStatus: 201 });
runAuthSuite({ api, method: 'GET', path: '/v1/api-keys', credential: 'dashboard', okStatus: 200 });
runAuthSuite({
  api,
  method: 'DELETE',
  path: '/v1/api-keys/:keyId',
  credential: 'dashboard',
  okStatus: 204,
  // A key of the suite's account per test, so a refusal is never a 404 in disguise.
  makeTarget: async (_api, owner) => {
    const created = await createKey(owner, { name: 'target' });
    assert.equal(created.status, 201);
    return { path: `/v1/api-keys/${created.body.id}` };
  },
});

runTenantCheck({
  name: "DELETE /v1/api-keys/{id} of another account's key answers 404 like an unknown id",
  api,
  method: 'DELETE',
  credential: 'dashboard',
  path: (id) => `/v1/api-keys/${id}`,
  makeResource: async (_api, owner) => owner.keyId,
  missingId: missingKeyId,
  code: 'api_key_not_found',
  ownerStillHasIt: async (_api, owner, id) => {
    assert.equal((await whoami(owner.key)).status, 200, 'the key still works');
    const list = await listKeys(owner);
    assert.ok(list.body.data.some((k: { id: string }) => k.id === id), 'the key is still listed');
    assert.equal((await revokeKey(owner, id)).status, 204, 'and its owner can still revoke it');
  },
});

test('create answers 201 {id, name, key, scopes, start, createdAt}; the key is pdk_live_ + base62 and works at once', async () => {
  const account = await newAccount(api.url, 'create');
  const before = Date.now();
  const res = await createKey(account, { name: 'laptop' });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ['createdAt', 'id', 'key', 'name', 'scopes', 'start']);
  assert.match(res.body.id, /^key_[0-9a-z]{24}$/);
  assert.equal(res.body.name, 'laptop');
  assert.match(res.body.key, /^pdk_live_[0-9A-Za-z]{50}$/);
  assert.ok(res.body.key.startsWith(res.body.start), 'start is the beginning of the key');
  assert.ok(res.body.start.length > 'pdk_live_'.length && res.body.start.length < 20, `start ${res.body.start}`);
  assert.match(res.body.createdAt, ISO);
  assert.ok(Math.abs(Date.parse(res.body.createdAt) - before) < 5000);
  const me = await whoami(res.body.key);
  assert.equal(me.status, 200);
  assert.equal(me.body.id, account.id);
});

test('the name defaults to "default", is trimmed, and is refused empty, too long or with control characters', async () => {
  const account = await newAccount(api.url, 'names');
  assert.equal((await createKey(account, {})).body.name, 'default');
  const noBody = await call(api.url, 'POST', '/v1/api-keys', { token: account.token });
  assert.equal(noBody.status, 201);
  assert.equal(noBody.body.name, 'default');
  assert.equal((await createKey(account, { name: '  ci runner  ' })).body.name, 'ci runner');
  const unicode = await createKey(account, { name: 'ключ 🔑' });
  assert.equal(unicode.body.name, 'ключ 🔑');
  const listed = (await listKeys(account)).body.data.find((k: { id: string }) => k.id === unicode.body.id);
  assert.equal(listed.name, 'ключ 🔑', 'listed exactly as created');
  assert.equal((await createKey(account, { name: 'n'.repeat(100) })).status, 201);
  for (const name of ['', '   ', 'n'.repeat(101), 'bell\u0007', 'line\nbreak', 'nul\u0000', 'lone \ud800 surrogate', '\udfff', 42, null, ['a'], { a: 1 }]) {
    const res = await createKey(account, { name });
    assertProblem(res, 400, 'invalid_request');
    assert.equal(res.body.errors[0].field, 'name', JSON.stringify(name));
  }
});

test('the raw key appears only in the create response: never in the list, the account or any later answer', async () => {
  const account = await newAccount(api.url, 'once');
  const created = await createKey(account, { name: 'secret' });
  assert.equal(created.status, 201);
  const key: string = created.body.key;
  const secretPart = key.slice('pdk_live_'.length);
  const later = [
    await listKeys(account),
    await whoami(key),
    await call(api.url, 'GET', '/v1/api-keys', { token: account.token }),
    await call(api.url, 'POST', '/v1/api-keys', { token: account.token, body: { name: 'another' } }),
    await revokeKey(account, created.body.id),
    await listKeys(account),
  ];
  for (const res of later) {
    assert.ok(res.status < 300, `${res.status}`);
    const text = `${JSON.stringify(res.body)} ${JSON.stringify([...res.headers])}`;
    assert.equal(text.includes(secretPart), false, `the key leaked into ${text}`);
    assert.equal(text.includes(secretPart.slice(0, 20)), false, 'not even a long part of it');
  }
  const list = later[0]!.body.data as Record<string, unknown>[];
  const entry = list.find((k) => k.id === created.body.id);
  assert.ok(entry);
  assert.deepEqual(Object.keys(entry).sort(), ['createdAt', 'id', 'lastUsedAt', 'name', 'scopes', 'start']);
  assert.equal(entry.start, created.body.start);
});

test('the database holds a hash of the key, not the key', async () => {
  const account = await newAccount(api.url, 'stored');
  const created = await createKey(account);
  assert.equal(created.status, 201);
  const key: string = created.body.key;
  const rows = await api.deps.orm.em
    .getConnection()
    .execute<Record<string, unknown>[]>('select * from api_keys where id = ?', [created.body.id]);
  assert.equal(rows.length, 1);
  const row = rows[0]!;
  for (const [column, value] of Object.entries(row)) {
    const text = value instanceof Date ? value.toISOString() : String(value);
    assert.equal(text.includes(key.slice('pdk_live_'.length)), false, `column ${column} holds the key`);
    assert.equal(text.includes(key.slice(9, 29)), false, `column ${column} holds a long part of the key`);
  }
  assert.equal(row.start, created.body.start);
  assert.equal(typeof row.key_hash, 'string');
  assert.ok((row.key_hash as string).length >= 32, 'a digest-sized hash');
  assert.equal(row.account_id, account.id);
  assert.equal(row.revoked_at, null);
});

test('the list shows the account\'s active keys, newest first, and never revoked ones', async () => {
  const account = await newAccount(api.url, 'list');
  const a = (await createKey(account, { name: 'a' })).body;
  const b = (await createKey(account, { name: 'b' })).body;
  const c = (await createKey(account, { name: 'c' })).body;
  let list = await listKeys(account);
  assert.equal(list.status, 200);
  assert.deepEqual(Object.keys(list.body), ['data']);
  const ids = list.body.data.map((k: { id: string }) => k.id);
  // newAccount made one ('test') first.
  assert.deepEqual(ids, [c.id, b.id, a.id, account.keyId]);
  assert.equal((await revokeKey(account, b.id)).status, 204);
  list = await listKeys(account);
  assert.deepEqual(list.body.data.map((k: { id: string }) => k.id), [c.id, a.id, account.keyId]);
  // Another account sees none of them.
  const other = await newAccount(api.url, 'list-other');
  assert.deepEqual((await listKeys(other)).body.data.map((k: { id: string }) => k.id), [other.keyId]);
});

test('a revoked key stops working at once; revoking again answers 204; the other keys keep working', async () => {
  const account = await newAccount(api.url, 'revoke');
  const spare = await createKey(account, { name: 'spare' });
  assert.equal((await whoami(account.key)).status, 200);
  const res = await revokeKey(account, account.keyId);
  assert.equal(res.status, 204);
  assert.equal(res.body, '');
  assertProblem(await whoami(account.key), 401, 'invalid_credential');
  assert.equal((await revokeKey(account, account.keyId)).status, 204, 'idempotent');
  assertProblem(await whoami(account.key), 401, 'invalid_credential');
  assert.equal((await whoami(spare.body.key)).status, 200);
});

test('DELETE of an unknown or malformed id answers 404 api_key_not_found', async () => {
  const account = await newAccount(api.url, 'unknown');
  for (const id of [missingKeyId(), 'nope', 'acct_000000000000000000000000', '%00', 'key_%00', '%E2%80%AE', '..%2F..%2Fv1%2Faccount']) {
    assertProblem(await revokeKey(account, id), 404, 'api_key_not_found');
  }
  // An id longer than any we issue is invalid input.
  const long = await revokeKey(account, `key_${'a'.repeat(200)}`);
  assertProblem(long, 400, 'invalid_request');
  assert.equal(long.body.errors[0].location, 'path');
  assert.equal((await whoami(account.key)).status, 200, 'nothing was revoked');
});

test("DELETE of another account's key answers 404 and leaves it working", async () => {
  const [owner, stranger] = await Promise.all([newAccount(api.url, 'own'), newAccount(api.url, 'stranger')]);
  assertProblem(await revokeKey(stranger, owner.keyId), 404, 'api_key_not_found');
  assert.equal((await whoami(owner.key)).status, 200);
});

test('lastUsedAt is null until the key is used, then set to about the time of use', async () => {
  const account = await newAccount(api.url, 'used');
  const entry = async () =>
    ((await listKeys(account)).body.data as { id: string; lastUsedAt: string | null }[]).find((k) => k.id === account.keyId)!;
  assert.equal((await entry()).lastUsedAt, null);
  const before = Date.now();
  assert.equal((await whoami(account.key)).status, 200);
  // Recorded off the request path: poll for it, with a deadline.
  const deadline = Date.now() + 5000;
  let lastUsedAt: string | null = null;
  while (lastUsedAt === null && Date.now() < deadline) {
    lastUsedAt = (await entry()).lastUsedAt;
    if (lastUsedAt === null) await new Promise((r) => setTimeout(r, 25));
  }
  assert.ok(lastUsedAt, 'lastUsedAt was never set');
  assert.match(lastUsedAt, ISO);
  const t = Date.parse(lastUsedAt);
  assert.ok(t >= before - 1000 && t <= Date.now() + 1000, `lastUsedAt ${lastUsedAt}`);
});

test('an API key cannot mint, list or revoke keys (401 wrong_credential_type)', async () => {
  const account = await newAccount(api.url, 'nomint');
  assertProblem(await call(api.url, 'POST', '/v1/api-keys', { token: account.key, body: {} }), 401, 'wrong_credential_type');
  assertProblem(await call(api.url, 'GET', '/v1/api-keys', { token: account.key }), 401, 'wrong_credential_type');
  assertProblem(await call(api.url, 'DELETE', `/v1/api-keys/${account.keyId}`, { token: account.key }), 401, 'wrong_credential_type');
  assert.equal((await listKeys(account)).body.data.length, 1, 'no key was made');
  assert.equal((await whoami(account.key)).status, 200, 'and none was revoked');
});

test('a session token whose account no longer exists cannot create a key (401, not 500)', async () => {
  const ghost = craftJwt(api, `acct_${'0'.repeat(24)}`);
  assertProblem(await call(api.url, 'POST', '/v1/api-keys', { token: ghost, body: {} }), 401, 'invalid_credential');
  assert.deepEqual((await call(api.url, 'GET', '/v1/api-keys', { token: ghost })).body, { data: [] });
  assertProblem(await call(api.url, 'DELETE', `/v1/api-keys/${missingKeyId()}`, { token: ghost }), 404, 'api_key_not_found');
});

test('unknown fields and unknown query parameters are refused with 400 naming them', async () => {
  const account = await newAccount(api.url, 'strict');
  const body = await createKey(account, { name: 'x', role: 'admin' });
  assertProblem(body, 400, 'invalid_request');
  assert.equal(body.body.errors[0].field, 'role');
  assert.match(body.body.detail, /role/);
  const query = await call(api.url, 'GET', '/v1/api-keys?includeRevoked=true', { token: account.token });
  assertProblem(query, 400, 'invalid_request');
  assert.deepEqual(query.body.errors[0], { location: 'query', field: 'includeRevoked', message: query.body.errors[0].message });
  const del = await call(api.url, 'DELETE', `/v1/api-keys/${account.keyId}?force=1`, { token: account.token });
  assertProblem(del, 400, 'invalid_request');
  assert.equal((await whoami(account.key)).status, 200, 'the refused DELETE revoked nothing');
});

test('/v1/api-keys answers 405 with an Allow header to other methods', async () => {
  const account = await newAccount(api.url, 'methods');
  const put = await call(api.url, 'PUT', '/v1/api-keys', { token: account.token, body: {} });
  assertProblem(put, 405, 'method_not_allowed');
  const allow = (put.headers.get('allow') ?? '').split(/,\s*/).sort();
  assert.deepEqual(allow, ['GET', 'HEAD', 'POST']);
  const get = await call(api.url, 'GET', `/v1/api-keys/${account.keyId}`, { token: account.token });
  assertProblem(get, 405, 'method_not_allowed');
  assert.equal(get.headers.get('allow'), 'DELETE');
});
