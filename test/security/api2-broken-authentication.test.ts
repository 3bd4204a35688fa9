import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import * as scryptModule from 'scrypt-kdf';
import jwt from 'jsonwebtoken';
import type { RunningApi } from '../../api/server.ts';
import type { Route } from '../../api/routes/route.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { startTestApi } from '../helpers/stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { uniqueEmail } from '../helpers/config.ts';
import { craftJwt, jwtSecretOf, JWT_AUDIENCE, JWT_ISSUER, JWT_TYPE } from '../helpers/auth-suite.ts';
import { credentialFor, routeKey, routesWhere, validRequestFor, sweepAuthSuite, workspacesOn } from './fixtures.ts';

// scrypt-kdf 4 ships only a default export although its typings declare named ones (as api/auth/passwords.ts reads it).
const scrypt = (scryptModule as unknown as { default: { verify: (key: string | Uint8Array, passphrase: string) => Promise<boolean>; viewParams: (key: Uint8Array) => { logN: number; r: number; p: number } } }).default;

// test-plan: once (each test stops at the credential)
// OWASP API2:2023 Broken Authentication. What each test here pins is decided at the credential,
// before the route reaches a runtime, so the file runs once; test/security/api2-credentials-accepted.test.ts runs,
// on both runtimes, the suite's cases where the credential is accepted.
//  - The shared credential suite's refusals (test/helpers/auth-suite.ts: missing, wrong-type, malformed,
//    unknown, revoked, expired, not-yet-valid, alg none, RS/HS confusion, other algorithms,
//    audience, issuer, type, subject, tampered and re-signed tokens) on every authenticated route
//    of the route list, each with a real target (a running sandbox, a key to revoke…).
//  - What that suite does not try: JOSE header tricks (kid, jku, jwk, x5u), malformed encodings,
//    any one-character typo of an API key, a revoked key on every route.
//  - Brute force on login is limited per client IP, and gives no oracle once limited.
//  - No enumeration through login (answers and work are the same); signup's 409 email_taken is
//    the contract's accepted trade-off, bounded by the same per-IP bucket.
// Replicas and the key cache are in test/api/credentials.test.ts.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '50' } });
const api = stack.apis[0]!;
const workspaceOf = workspacesOn(stack.url);
sweepAuthSuite(api, workspaceOf, 'refused');

// ---------------------------------------------------------------------------------------------

const b64url = (v: string | Buffer) => Buffer.from(v).toString('base64url');

function signed(header: object, payload: object, key: string | Buffer, alg: 'sha256' | 'sha512' = 'sha256'): string {
  const head = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  return `${head}.${createHmac(alg, key).update(head).digest('base64url')}`;
}

describe('JOSE header and encoding tricks answer 401 invalid_credential', () => {
  let victim: TestAccount;
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const claims = () => {
    const now = Math.floor(Date.now() / 1000);
    return { typ: JWT_TYPE, iat: now, nbf: now, exp: now + 600, iss: JWT_ISSUER, aud: JWT_AUDIENCE, sub: victim.id };
  };
  const attacker = (header: object) => jwt.sign(claims(), rsa.privateKey, { algorithm: 'RS256', header: { alg: 'RS256', ...header } });
  const secret = () => jwtSecretOf(api);

  const cases: [string, () => string][] = [
    ['kid pointing at /dev/null, signed with an empty key', () => signed({ alg: 'HS256', typ: 'JWT', kid: '../../../../../../dev/null' }, claims(), '')],
    ['kid with SQL, signed with the value it would select', () => signed({ alg: 'HS256', kid: "x' UNION SELECT 'attacker' --" }, claims(), 'attacker')],
    ['jku pointing at an attacker key set', () => attacker({ jku: 'http://127.0.0.1:1/jwks.json', kid: 'attacker' })],
    ['x5u pointing at an attacker certificate', () => attacker({ x5u: 'http://127.0.0.1:1/cert.pem' })],
    ['the attacker key embedded as jwk', () => attacker({ jwk: rsa.publicKey.export({ format: 'jwk' }) })],
    ['alg: nOnE', () => `${b64url(JSON.stringify({ alg: 'nOnE' }))}.${b64url(JSON.stringify(claims()))}.`],
    ['alg: HS256 with an empty signature', () => `${b64url(JSON.stringify({ alg: 'HS256' }))}.${b64url(JSON.stringify(claims()))}.`],
    ['alg: HS256 signed with HMAC-SHA512', () => signed({ alg: 'HS256' }, claims(), secret(), 'sha512')],
    ['no alg at all', () => signed({ typ: 'JWT' }, claims(), secret())],
    ['exp as a string far in the future', () => signed({ alg: 'HS256' }, { ...claims(), exp: '9999999999' }, secret())],
    ['expired one second ago', () => signed({ alg: 'HS256' }, { ...claims(), exp: Math.floor(Date.now() / 1000) - 1 }, secret())],
    ['nbf a minute from now', () => signed({ alg: 'HS256' }, { ...claims(), nbf: Math.floor(Date.now() / 1000) + 60 }, secret())],
    ['an audience list without ours', () => signed({ alg: 'HS256' }, { ...claims(), aud: ['paddock-api', 'other'] }, secret())],
    ['a subject that is an object', () => signed({ alg: 'HS256' }, { ...claims(), sub: { id: victim.id } }, secret())],
    ['base64 padding on a segment', () => {
      const [h, p, s] = craftJwt(api, victim.id).split('.');
      return `${h}.${p}==.${s}`;
    }],
    ['a header with + and / (base64, not base64url)', () => {
      const [, p, s] = craftJwt(api, victim.id).split('.');
      return `${Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT', pad: '\u00fb\u00ff\u00fe?>' })).toString('base64')}.${p}.${s}`;
    }],
    ['four segments', () => `${craftJwt(api, victim.id)}.AAAA`],
    ['a JWE-shaped token (five segments)', () => `${b64url('{"alg":"dir","enc":"A256GCM"}')}..AAAA.AAAA.AAAA`],
    ['a valid token with trailing garbage', () => `${craftJwt(api, victim.id)}x`],
    ['a valid token with a signature of another token', () => {
      const [h, p] = craftJwt(api, victim.id).split('.');
      return `${h}.${p}.${craftJwt(api, victim.id, { claims: { jti: 'other' } }).split('.')[2]}`;
    }],
  ];

  test('setup and control: the crafted claims are otherwise right', async () => {
    victim = await newAccount(stack.url, 'jose');
    const control = signed({ alg: 'HS256', typ: 'JWT' }, claims(), secret());
    assert.equal((await call(stack.url, 'GET', '/v1/api-keys', { token: control })).status, 200);
  });

  for (const [label, token] of cases) {
    test(label, async () => {
      const t = token();
      assertProblem(await call(stack.url, 'GET', '/v1/api-keys', { token: t }), 401, 'invalid_credential');
      assertProblem(await call(stack.url, 'POST', '/v1/api-keys', { token: t, body: { name: 'forged' } }), 401, 'invalid_credential');
    });
  }

  test('none of them minted a key', async () => {
    const keys = await call(stack.url, 'GET', '/v1/api-keys', { token: victim.token });
    assert.deepEqual(keys.body.data.map((k: { id: string }) => k.id), [victim.keyId]);
  });
});

describe('API key checksums: any one-character typo is refused, before any lookup', () => {
  let account: TestAccount;
  test('setup', async () => {
    account = await newAccount(stack.url, 'typo');
  });

  const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  const cacheKey = (key: string) => `${stack.config.PADDOCK_REDIS_PREFIX}:apikey:${createHash('sha256').update(key).digest('hex')}`;

  test('substituting, deleting, inserting or swapping one character anywhere answers 401 invalid_credential', async () => {
    const key = account.key;
    const typo = fc.oneof(
      fc.tuple(fc.nat({ max: key.length - 1 }), fc.constantFrom(...BASE62, '_', '-')).map(([i, c]) => key.slice(0, i) + c + key.slice(i + 1)),
      fc.nat({ max: key.length - 1 }).map((i) => key.slice(0, i) + key.slice(i + 1)),
      fc.tuple(fc.nat({ max: key.length }), fc.constantFrom(...BASE62)).map(([i, c]) => key.slice(0, i) + c + key.slice(i)),
      fc.nat({ max: key.length - 2 }).map((i) => key.slice(0, i) + key[i + 1]! + key[i]! + key.slice(i + 2)),
    );
    await fc.assert(
      fc.asyncProperty(typo, async (mistyped) => {
        fc.pre(mistyped !== key);
        const res = await call(stack.url, 'GET', '/v1/account', { token: mistyped });
        assertProblem(res, 401, 'invalid_credential');
        // Nothing of it was looked up or cached.
        assert.equal(await api.deps.redis.exists(cacheKey(mistyped)), 0);
      }),
      { numRuns: 150, seed: 2026 },
    );
    assert.equal((await call(stack.url, 'GET', '/v1/account', { token: key })).status, 200, 'the key itself works');
  });
});

test('a revoked key is refused on every API-key route before anything else', async () => {
  const owner = await newAccount(stack.url, 'revoked');
  const w = workspaceOf(owner);
  await w.sandboxId();
  const spare = await call(stack.url, 'POST', '/v1/api-keys', { token: owner.token, body: { name: 'to revoke' } });
  assert.equal((await call(stack.url, 'GET', '/v1/account', { token: spare.body.key })).status, 200);
  assert.equal((await call(stack.url, 'DELETE', `/v1/api-keys/${spare.body.id}`, { token: owner.token })).status, 204);
  for (const route of routesWhere((r) => r.spec.auth === 'apiKey')) {
    const req = await validRequestFor(route, w);
    const res = await call(stack.url, req.method, req.path, { token: spare.body.key, body: req.body, upgrade: req.upgrade });
    assertProblem(res, 401, 'invalid_credential');
  }
});

// ---------------------------------------------------------------------------------------------

// Started here, not in a hook: a server started in a hook or test closes when it ends.
const LIMIT = 5;
const limited: RunningApi = await startTestApi({ overrides: { PADDOCK_RATE_AUTH_PER_MIN: String(LIMIT) } });

describe('brute force on login is limited per client IP', () => {
  let victim: TestAccount;
  let other: TestAccount;
  let verifications = 0;

  test('setup: an API with PADDOCK_RATE_AUTH_PER_MIN=5; the accounts are made through another deployment', async () => {
    // Same database, another Redis prefix: making the accounts takes nothing from the limited bucket.
    [victim, other] = await Promise.all([newAccount(api.url, 'victim'), newAccount(api.url, 'bystander')]);
    const verify = limited.deps.passwords.verify.bind(limited.deps.passwords);
    limited.deps.passwords.verify = (stored, password) => {
      verifications++;
      return verify(stored, password);
    };
  });

  const login = (email: string, password: string, headers: Record<string, string> = {}) =>
    call(limited.url, 'POST', '/v1/auth/login', { body: { email, password }, headers });

  test(`${LIMIT} wrong passwords answer invalid_login, the next is 429 with Retry-After`, async () => {
    for (let i = 0; i < LIMIT; i++) assertProblem(await login(victim.email, `guess number ${i}`), 401, 'invalid_login');
    const refused = await login(victim.email, 'one more guess');
    assertProblem(refused, 429, 'rate_limited');
    assert.equal(refused.body.bucket, 'auth');
    assert.match(refused.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  });

  test('once limited there is no oracle: the right password, another email, signup all answer 429', async () => {
    assertProblem(await login(victim.email, victim.password), 429, 'rate_limited');
    assertProblem(await login(other.email, other.password), 429, 'rate_limited');
    assertProblem(await login(victim.email.toUpperCase(), victim.password), 429, 'rate_limited');
    assertProblem(await call(limited.url, 'POST', '/v1/auth/signup', { body: { email: uniqueEmail('late'), password: 'long enough password' } }), 429, 'rate_limited');
  });

  test('X-Forwarded-For does not give a fresh bucket (PADDOCK_TRUST_PROXY is off)', async () => {
    for (const ip of ['10.0.0.1', '203.0.113.7', '::1', '127.0.0.2, 10.9.9.9']) {
      assertProblem(await login(victim.email, victim.password, { 'x-forwarded-for': ip }), 429, 'rate_limited');
    }
  });

  test('refused attempts cost no password verification; the victim is not locked out of the API', async () => {
    assert.equal(verifications, LIMIT, 'only the admitted attempts ran scrypt');
    // (Its session token is the other deployment's, signed with another secret; its key works anywhere.)
    assert.equal((await call(limited.url, 'GET', '/v1/account', { token: victim.key })).status, 200);
  });

  test('the refusals are counted for the operator', async () => {
    const text = (await call(limited.url, 'GET', '/metrics')).body as string;
    const refusals = /^paddock_rate_limit_refusals_total\{bucket="auth"\} (\d+)$/m.exec(text);
    assert.ok(refusals, 'paddock_rate_limit_refusals_total{bucket="auth"}');
    assert.equal(Number(refusals[1]), 1 + 4 + 4, 'every refusal above, and nothing else');
  });
});

// ---------------------------------------------------------------------------------------------

describe('no email enumeration', () => {
  let known: TestAccount;
  test('setup', async () => {
    known = await newAccount(stack.url, 'known');
  });

  const comparable = (res: JsonResponse) => ({
    status: res.status,
    body: { ...(res.body as object), requestId: undefined },
    headers: [...res.headers].filter(([name]) => !['x-request-id', 'date', 'x-ratelimit-remaining'].includes(name)),
  });

  test('login: a wrong password and an unknown email answer byte for byte the same (but the request id)', async () => {
    const login = (email: string, password: string) => call(stack.url, 'POST', '/v1/auth/login', { body: { email, password } });
    const wrong = await login(known.email, 'not the password');
    for (const email of [uniqueEmail('nobody'), `  ${known.email.replace('@', '+x@')}`, known.email.replace(/^./, 'z')]) {
      const unknown = await login(email, 'not the password');
      assertProblem(unknown, 401, 'invalid_login');
      assert.deepEqual(comparable(unknown), comparable(wrong));
    }
    // The same email in another case or with spaces is the same account, not another answer.
    assert.equal((await login(` ${known.email.toUpperCase()} `, known.password)).status, 200);
  });

  test('login: both paths run one full password verification, at the same cost', async () => {
    // Structural, not a stopwatch: each login verifies once against a genuine key (its checksum
    // holds, so scrypt-kdf derives the whole key rather than refusing early) of the same cost
    // parameters, whether the email is known or not.
    const calls: boolean[] = [];
    const hasher = api.deps.passwords;
    const verify = hasher.verify.bind(hasher);
    hasher.verify = async (stored, password) => {
      calls.push(stored !== undefined);
      return verify(stored, password);
    };
    const keys: { params: { logN: number; r: number; p: number }; genuine: boolean }[] = [];
    const verifyKey = scrypt.verify;
    scrypt.verify = async (key, passphrase) => {
      const bytes = typeof key === 'string' ? Buffer.from(key, 'base64') : Buffer.from(key);
      keys.push({ params: scrypt.viewParams(bytes), genuine: createHash('sha256').update(bytes.subarray(0, 48)).digest().subarray(0, 16).equals(bytes.subarray(48, 64)) });
      return verifyKey.call(scrypt, key, passphrase);
    };
    const perLogin: number[] = [];
    try {
      for (let i = 0; i < 6; i++) {
        for (const email of [known.email, uniqueEmail('ghost')]) {
          const before = keys.length;
          assertProblem(await call(stack.url, 'POST', '/v1/auth/login', { body: { email, password: `wrong ${i}` } }), 401, 'invalid_login');
          perLogin.push(keys.length - before);
        }
      }
    } finally {
      hasher.verify = verify;
      scrypt.verify = verifyKey;
    }
    assert.deepEqual(calls, Array.from({ length: 12 }, (_, i) => i % 2 === 0), 'one verification per login, known and unknown in turn');
    assert.deepEqual(perLogin, Array(12).fill(1), 'one scrypt verification per login');
    const real = keys[0]!.params;
    assert.ok(real.logN >= 1, JSON.stringify(real));
    for (const key of keys) {
      assert.deepEqual(key.params, real, 'every verification at the same cost');
      assert.ok(key.genuine, 'every verification against a genuine key, which scrypt-kdf derives in full');
    }
  });

  test("signup: 409 email_taken is the contract's trade-off; it says nothing more, and shares the per-IP limit", async () => {
    const again = await call(stack.url, 'POST', '/v1/auth/signup', { body: { email: known.email.toUpperCase(), password: 'another long password' } });
    assertProblem(again, 409, 'email_taken');
    const text = JSON.stringify(again.body);
    assert.ok(!text.includes(known.id) && !text.includes(known.email), 'no account id or email in the answer');
    assert.deepEqual(Object.keys(again.body).sort(), ['code', 'detail', 'requestId', 'status', 'title', 'type']);
    // It runs behind the same per-IP bucket as login (see the brute-force tests above).
    const signupRoute = routesWhere((r) => routeKey(r) === 'POST /v1/auth/signup')[0] as Route;
    assert.equal(signupRoute.spec.bucket, 'auth');
    assert.equal(credentialFor(signupRoute, known), undefined);
  });
});
