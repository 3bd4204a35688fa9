import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { testConfig } from '../helpers/config.ts';
import { ConfigError } from '../../shared/config.ts';
import { allRoutes } from '../../api/routes/index.ts';

// Two replicas of one deployment: the second shares the first's Redis prefix and JWT secret.
const a = await startTestApi();
const b = await startTestApi({ config: a.deps.config });
const whoami = (url: string, key: string) => call(url, 'GET', '/v1/account', { token: key });

test('a revoked key is refused by the other replica on the very next request, though it had it cached', async () => {
  const account = await newAccount(a.url, 'replicas');
  // Used on B, several times, so that B has the lookup cached.
  for (let i = 0; i < 3; i++) assert.equal((await whoami(b.url, account.key)).status, 200);
  const revoked = await call(a.url, 'DELETE', `/v1/api-keys/${account.keyId}`, { token: account.token });
  assert.equal(revoked.status, 204);
  assertProblem(await whoami(b.url, account.key), 401, 'invalid_credential');
  assertProblem(await whoami(a.url, account.key), 401, 'invalid_credential');
});

test('a key revoked while requests race on the other replica is refused by every request that starts after', async () => {
  const account = await newAccount(a.url, 'race');
  assert.equal((await whoami(b.url, account.key)).status, 200);
  const during = Array.from({ length: 20 }, () => whoami(b.url, account.key));
  const revoked = await call(a.url, 'DELETE', `/v1/api-keys/${account.keyId}`, { token: account.token });
  assert.equal(revoked.status, 204);
  for (const res of await Promise.all(during)) assert.ok([200, 401].includes(res.status), `${res.status}`);
  const after = await Promise.all(Array.from({ length: 10 }, () => whoami(b.url, account.key)));
  for (const res of after) assertProblem(res, 401, 'invalid_credential');
});

test('a key created on one replica works on the other at once', async () => {
  const account = await newAccount(a.url, 'created');
  const res = await whoami(b.url, account.key);
  assert.equal(res.status, 200);
  assert.equal(res.body.id, account.id);
});

test('a session token from one replica works on the other (one shared secret)', async () => {
  const account = await newAccount(a.url, 'token');
  const login = await call(b.url, 'POST', '/v1/auth/login', { body: { email: account.email, password: account.password } });
  assert.equal(login.status, 200);
  assert.equal((await call(a.url, 'GET', '/v1/api-keys', { token: login.body.token })).status, 200);
  assert.equal((await call(b.url, 'GET', '/v1/api-keys', { token: account.token })).status, 200);
});

test('a session token from another deployment (another secret) answers 401 invalid_credential', async () => {
  const other = await startTestApi();
  assert.notEqual(other.deps.config.PADDOCK_JWT_SECRET, a.deps.config.PADDOCK_JWT_SECRET);
  const stranger = await newAccount(other.url, 'elsewhere');
  assertProblem(await call(a.url, 'GET', '/v1/api-keys', { token: stranger.token }), 401, 'invalid_credential');
  // And a token of this deployment is refused there.
  const local = await newAccount(a.url, 'here');
  assertProblem(await call(other.url, 'GET', '/v1/api-keys', { token: local.token }), 401, 'invalid_credential');
});

test('JWT secret rotation: tokens of the previous secret are accepted, new ones are signed with the current secret only', async () => {
  const oldSecret = a.deps.config.PADDOCK_JWT_SECRET!;
  const newSecret = `rotated-${oldSecret}`;
  const rotated = await startTestApi({ config: { ...a.deps.config, PADDOCK_JWT_SECRET: newSecret, PADDOCK_JWT_SECRET_PREVIOUS: [oldSecret] } });
  const after = await startTestApi({ config: { ...a.deps.config, PADDOCK_JWT_SECRET: newSecret } });
  const account = await newAccount(a.url, 'rotation');
  // A session from before the rotation still works on a rolled replica…
  assert.equal((await call(rotated.url, 'GET', '/v1/api-keys', { token: account.token })).status, 200);
  // …but not once the previous secret is dropped.
  assertProblem(await call(after.url, 'GET', '/v1/api-keys', { token: account.token }), 401, 'invalid_credential');
  // A session from the rolled replica is signed with the new secret: the old-secret replica refuses it.
  const login = await call(rotated.url, 'POST', '/v1/auth/login', { body: { email: account.email, password: account.password } });
  assert.equal(login.status, 200);
  assert.equal((await call(after.url, 'GET', '/v1/api-keys', { token: login.body.token })).status, 200);
  assertProblem(await call(a.url, 'GET', '/v1/api-keys', { token: login.body.token }), 401, 'invalid_credential');
});

test('PADDOCK_JWT_SECRET_PREVIOUS with a short secret is refused naming the variable, not the value', () => {
  const short = 'too-short-secret';
  assert.throws(
    () => testConfig({ PADDOCK_JWT_SECRET_PREVIOUS: `${'x'.repeat(40)},${short}` }),
    (err: Error) => {
      assert.ok(err instanceof ConfigError, String(err));
      assert.match(err.message, /PADDOCK_JWT_SECRET_PREVIOUS: expected comma-separated secrets of at least 32 characters/);
      assert.ok(!err.message.includes(short), 'the message shows the secret');
      return true;
    },
  );
});

test('with the key cache disabled, keys still work and revocation still holds', async () => {
  const uncached = await startTestApi({ overrides: { PADDOCK_API_KEY_CACHE_SECONDS: '0' } });
  const account = await newAccount(uncached.url, 'nocache');
  assert.equal((await whoami(uncached.url, account.key)).status, 200);
  assert.equal((await whoami(uncached.url, account.key)).status, 200);
  assert.equal((await call(uncached.url, 'DELETE', `/v1/api-keys/${account.keyId}`, { token: account.token })).status, 204);
  assertProblem(await whoami(uncached.url, account.key), 401, 'invalid_credential');
});

test('a revoked key stays refused when the shared cache has forgotten it (expiry, Redis restart)', async () => {
  const config = testConfig();
  const short = await startTestApi({ config });
  const account = await newAccount(short.url, 'expiry');
  assert.equal((await whoami(short.url, account.key)).status, 200);
  assert.equal((await call(short.url, 'DELETE', `/v1/api-keys/${account.keyId}`, { token: account.token })).status, 204);
  // Drop every cached entry and tombstone of this stack: the database alone must say "revoked".
  const keys = await short.deps.redis.keys(`${config.PADDOCK_REDIS_PREFIX}:apikey:*`);
  assert.ok(keys.length > 0, 'the key was cached');
  await short.deps.redis.del(...keys);
  assertProblem(await whoami(short.url, account.key), 401, 'invalid_credential');
});

test("one account's session token cannot act on another account's keys", async () => {
  const [owner, stranger] = await Promise.all([newAccount(a.url, 'mine'), newAccount(a.url, 'theirs')]);
  const list = await call(b.url, 'GET', '/v1/api-keys', { token: stranger.token });
  assert.deepEqual(list.body.data.map((k: { id: string }) => k.id), [stranger.keyId]);
  assertProblem(await call(b.url, 'DELETE', `/v1/api-keys/${owner.keyId}`, { token: stranger.token }), 404, 'api_key_not_found');
  assert.equal((await whoami(a.url, owner.key)).status, 200);
});

test('every authenticated route takes the credential the contract says: session tokens on /v1/api-keys*, API keys elsewhere', () => {
  const authenticated = allRoutes.filter((r) => r.spec.auth !== 'none');
  assert.ok(authenticated.length >= 4);
  for (const { spec } of authenticated) {
    const expected = spec.path.startsWith('/v1/api-keys') ? 'dashboard' : 'apiKey';
    assert.equal(spec.auth, expected, `${spec.method.toUpperCase()} ${spec.path}`);
  }
  for (const { spec } of allRoutes.filter((r) => r.spec.auth === 'none')) {
    assert.ok(spec.path.startsWith('/v1/auth/'), `${spec.method.toUpperCase()} ${spec.path} is unauthenticated`);
  }
});

test('every authenticated route refuses a missing, a wrong-type and a garbage credential before anything else', async () => {
  const account = await newAccount(a.url, 'sweep');
  for (const { spec } of allRoutes.filter((r) => r.spec.auth !== 'none')) {
    const method = spec.method.toUpperCase();
    // Made-up ids and no body: the credential is checked before the route looks at either.
    const path = spec.path.replace(/:(\w+)/g, 'x');
    const what = `${method} ${spec.path}`;
    const other = spec.auth === 'apiKey' ? account.token : account.key;
    for (const [res, code] of [
      [await call(a.url, method, path), 'missing_credential'],
      [await call(a.url, method, path, { token: other }), 'wrong_credential_type'],
      [await call(a.url, method, path, { token: 'garbage' }), 'invalid_credential'],
    ] as const) {
      assert.equal(res.status, 401, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
      assertProblem(res, 401, code);
    }
  }
});
