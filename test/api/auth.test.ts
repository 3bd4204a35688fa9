import { test } from 'node:test';
import assert from 'node:assert/strict';
import jwt from 'jsonwebtoken';
import { startTestApi } from '../helpers/stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { assertProblem } from '../helpers/accounts.ts';
import { uniqueEmail } from '../helpers/config.ts';

const TTL = 900;
const api = await startTestApi({ overrides: { PADDOCK_JWT_TTL_SECONDS: String(TTL) } });
const PASSWORD = 'correct horse battery staple';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const signup = (email: string, password = PASSWORD) => call(api.url, 'POST', '/v1/auth/signup', { body: { email, password } });
const login = (email: string, password = PASSWORD) => call(api.url, 'POST', '/v1/auth/login', { body: { email, password } });

function withoutRequestId(res: JsonResponse): unknown {
  return { ...(res.body as object), requestId: undefined };
}

test('signup answers 201 {account:{id,email,createdAt}, token, expiresAt} and nothing else', async () => {
  const email = uniqueEmail('signup');
  const before = Date.now();
  const res = await signup(email);
  const after = Date.now();
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(res.body).sort(), ['account', 'expiresAt', 'token']);
  assert.deepEqual(Object.keys(res.body.account).sort(), ['createdAt', 'email', 'id']);
  assert.match(res.body.account.id, /^acct_[0-9a-z]{24}$/);
  assert.equal(res.body.account.email, email);
  assert.match(res.body.account.createdAt, ISO);
  const created = Date.parse(res.body.account.createdAt);
  assert.ok(created >= before - 1000 && created <= after + 1000, 'createdAt is now');
  assert.match(res.body.expiresAt, ISO);
  const expires = Date.parse(res.body.expiresAt);
  assert.ok(expires >= before + TTL * 1000 - 2000 && expires <= after + TTL * 1000 + 1000, 'expiresAt is now + TTL');
  assert.equal(JSON.stringify(res.body).includes(PASSWORD), false, 'the password is never echoed');
});

test('the signup token is a dashboard session token: it lists keys and is refused on API-key routes', async () => {
  const res = await signup(uniqueEmail('signup-token'));
  assert.equal(res.status, 201);
  const keys = await call(api.url, 'GET', '/v1/api-keys', { token: res.body.token });
  assert.equal(keys.status, 200);
  assert.deepEqual(keys.body, { data: [] });
  assertProblem(await call(api.url, 'GET', '/v1/account', { token: res.body.token }), 401, 'wrong_credential_type');
});

test("the token's claims: HS256, iss, aud, typ, sub = the account, exp - iat = PADDOCK_JWT_TTL_SECONDS", async () => {
  const res = await signup(uniqueEmail('claims'));
  assert.equal(res.status, 201);
  for (const token of [res.body.token as string, (await login(res.body.account.email)).body.token as string]) {
    const decoded = jwt.decode(token, { complete: true });
    assert.ok(decoded && typeof decoded.payload === 'object');
    assert.equal(decoded.header.alg, 'HS256');
    const claims = decoded.payload;
    assert.equal(claims.iss, 'paddock');
    assert.equal(claims.aud, 'paddock-dashboard');
    assert.equal(claims.typ, 'dashboard');
    assert.equal(claims.sub, res.body.account.id);
    assert.equal(typeof claims.iat, 'number');
    assert.equal(claims.exp! - claims.iat!, TTL);
    assert.ok(Math.abs(claims.iat! - Date.now() / 1000) < 60, 'iat is now');
    // The token verifies with the server's secret and nothing else is needed to read it.
    assert.doesNotThrow(() => jwt.verify(token, api.deps.config.PADDOCK_JWT_SECRET!, { algorithms: ['HS256'] }));
  }
  assert.equal(Date.parse(res.body.expiresAt) / 1000, (jwt.decode(res.body.token) as jwt.JwtPayload).exp);
});

test('the email is normalised: surrounding spaces and case', async () => {
  const email = uniqueEmail('norm');
  const res = await signup(`  ${email.toUpperCase()}\t `);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.account.email, email);
  // Login accepts any case and spacing of the same address.
  const logged = await login(` ${email.replace(/^./, (c) => c.toUpperCase())} `);
  assert.equal(logged.status, 200, JSON.stringify(logged.body));
  assert.equal((jwt.decode(logged.body.token) as jwt.JwtPayload).sub, res.body.account.id);
});

test('a second signup with the same email, in any case, answers 409 email_taken', async () => {
  const email = uniqueEmail('dup');
  assert.equal((await signup(email)).status, 201);
  assertProblem(await signup(email), 409, 'email_taken');
  assertProblem(await signup(email.toUpperCase(), 'another password 123'), 409, 'email_taken');
  assertProblem(await signup(` ${email} `), 409, 'email_taken');
  // The first account keeps its password.
  assert.equal((await login(email)).status, 200);
  assertProblem(await login(email, 'another password 123'), 401, 'invalid_login');
});

test('concurrent signups with one email create exactly one account', async () => {
  const email = uniqueEmail('race');
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) => signup(i % 2 ? email.toUpperCase() : email, `password number ${i}`)),
  );
  const created = results.filter((r) => r.status === 201);
  assert.equal(created.length, 1, results.map((r) => r.status).join(','));
  for (const r of results.filter((x) => x.status !== 201)) assertProblem(r, 409, 'email_taken');
  const rows = await api.deps.orm.em.getConnection().execute<{ n: string }[]>(
    'select count(*) as n from accounts where email = ?',
    [email],
  );
  assert.equal(Number(rows[0]!.n), 1);
});

test('login answers 200 {token, expiresAt}; the token works on /v1/api-keys', async () => {
  const email = uniqueEmail('login');
  const s = await signup(email);
  assert.equal(s.status, 201);
  const before = Date.now();
  const res = await login(email);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ['expiresAt', 'token']);
  assert.match(res.body.expiresAt, ISO);
  assert.ok(Math.abs(Date.parse(res.body.expiresAt) - (before + TTL * 1000)) < 5000);
  const keys = await call(api.url, 'GET', '/v1/api-keys', { token: res.body.token });
  assert.equal(keys.status, 200);
});

test('wrong password and unknown email answer the very same 401 invalid_login', async () => {
  const email = uniqueEmail('same');
  assert.equal((await signup(email)).status, 201);
  const wrong = await login(email, 'not the password at all');
  const unknown = await login(uniqueEmail('nobody'), 'not the password at all');
  assertProblem(wrong, 401, 'invalid_login');
  assertProblem(unknown, 401, 'invalid_login');
  assert.deepEqual(withoutRequestId(wrong), withoutRequestId(unknown));
  const headerNames = (r: JsonResponse) =>
    [...r.headers.keys()].filter((h) => !['date', 'x-request-id', 'x-ratelimit-remaining'].includes(h)).sort();
  assert.deepEqual(headerNames(wrong), headerNames(unknown));
  for (const h of headerNames(wrong)) assert.equal(wrong.headers.get(h), unknown.headers.get(h), h);
  assert.notEqual(wrong.body.requestId, unknown.body.requestId);
});

test('wrong password and unknown email take similar time (mean of 10 each, within 0.5x-2x)', async () => {
  // Its own stack with a costlier hash, so that the hash dominates the HTTP round trip.
  const slow = await startTestApi({ overrides: { PADDOCK_SCRYPT_LOG_N: '14' } });
  const email = uniqueEmail('timing');
  assert.equal((await call(slow.url, 'POST', '/v1/auth/signup', { body: { email, password: PASSWORD } })).status, 201);
  const attempt = async (who: string) => {
    const started = process.hrtime.bigint();
    const res = await call(slow.url, 'POST', '/v1/auth/login', { body: { email: who, password: 'wrong password 42' } });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    assertProblem(res, 401, 'invalid_login');
    return ms;
  };
  // Warm up both paths (the first unknown-email login derives the dummy hash).
  await attempt(email);
  await attempt(uniqueEmail('ghost'));
  const known: number[] = [];
  const unknown: number[] = [];
  for (let i = 0; i < 10; i++) {
    // Interleaved, so that drift in machine load affects both alike.
    known.push(await attempt(email));
    unknown.push(await attempt(uniqueEmail('ghost')));
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const ratio = mean(unknown) / mean(known);
  assert.ok(ratio > 0.5 && ratio < 2, `unknown/known = ${ratio.toFixed(2)} (${mean(unknown).toFixed(1)} / ${mean(known).toFixed(1)} ms)`);
});

test('signup validation: bad email, short or long password, missing fields answer 400 invalid_request', async () => {
  const cases: [unknown, string][] = [
    [{ email: 'not-an-email', password: PASSWORD }, 'email'],
    [{ email: '', password: PASSWORD }, 'email'],
    [{ email: `${'a'.repeat(250)}@example.test`, password: PASSWORD }, 'email'],
    [{ email: uniqueEmail(), password: 'short' }, 'password'],
    [{ email: uniqueEmail(), password: 'x'.repeat(1025) }, 'password'],
    [{ password: PASSWORD }, 'email'],
    [{ email: uniqueEmail() }, 'password'],
  ];
  for (const [body, field] of cases) {
    const res = await call(api.url, 'POST', '/v1/auth/signup', { body });
    assertProblem(res, 400, 'invalid_request');
    assert.equal(res.body.errors[0].field, field, JSON.stringify(res.body));
    assert.match(res.body.detail, new RegExp(`^body\\.${field}: `));
  }
});

test('a password of exactly 10 and of 1024 characters is accepted', async () => {
  for (const password of ['0123456789', 'p'.repeat(1024)]) {
    const email = uniqueEmail('pwlen');
    assert.equal((await signup(email, password)).status, 201);
    assert.equal((await login(email, password)).status, 200);
  }
});

test('login validation: a malformed email answers 400, not 401', async () => {
  const res = await call(api.url, 'POST', '/v1/auth/login', { body: { email: 'nobody', password: 'x' } });
  assertProblem(res, 400, 'invalid_request');
  assert.equal(res.body.errors[0].field, 'email');
  const empty = await call(api.url, 'POST', '/v1/auth/login', { body: { email: uniqueEmail(), password: '' } });
  assertProblem(empty, 400, 'invalid_request');
  assert.equal(empty.body.errors[0].field, 'password');
});

test('the password is stored as a salted hash, never as given', async () => {
  const email = uniqueEmail('stored');
  const [a, b] = [await signup(email), await signup(uniqueEmail('stored2'))];
  assert.equal(a.status, 201);
  assert.equal(b.status, 201);
  const rows = await api.deps.orm.em
    .getConnection()
    .execute<Record<string, unknown>[]>('select * from accounts where id in (?, ?) order by id', [a.body.account.id, b.body.account.id]);
  assert.equal(rows.length, 2);
  for (const row of rows) {
    for (const value of Object.values(row)) assert.equal(String(value).includes(PASSWORD), false);
  }
  assert.notEqual(rows[0]!.password_hash, rows[1]!.password_hash, 'the same password hashes differently (salt)');
});

test('signup and login answer 405 to other methods, with an Allow header', async () => {
  for (const path of ['/v1/auth/signup', '/v1/auth/login']) {
    const res = await call(api.url, 'GET', path);
    assertProblem(res, 405, 'method_not_allowed');
    assert.match(res.headers.get('allow') ?? '', /\bPOST\b/);
  }
});
