import { before, describe, test } from 'node:test';
import { crc32 } from 'node:zlib';
import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { RunningApi } from '../../api/server.ts';
import { call, type JsonResponse } from './http.ts';
import { assertProblem, newAccount, type TestAccount } from './accounts.ts';

// The shared credential checks every authenticated route runs: register them with runAuthSuite,
// once per route. A route whose chain authenticates as all routes do passes them unchanged.

export type CredentialKind = 'apiKey' | 'dashboard';

/** The dashboard token's fixed claims (see api/auth/jwt.ts). */
export const JWT_ISSUER = 'paddock';
export const JWT_AUDIENCE = 'paddock-dashboard';
export const JWT_TYPE = 'dashboard';

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** The server's signing secret; test stacks always set one. */
export function jwtSecretOf(api: RunningApi): string {
  const secret = api.deps.config.PADDOCK_JWT_SECRET;
  assert.ok(secret, 'the test stack has no PADDOCK_JWT_SECRET');
  return secret;
}

/**
 * A dashboard token signed like the server signs them, with `claims` merged over the valid ones
 * (`undefined` removes a claim). `secret` defaults to the server's.
 */
export function craftJwt(
  api: RunningApi,
  accountId: string,
  options: { claims?: Record<string, unknown>; secret?: string | KeyObject; algorithm?: jwt.Algorithm } = {},
): string {
  const now = Math.floor(Date.now() / 1000);
  const payload: Record<string, unknown> = {
    typ: JWT_TYPE,
    iat: now,
    nbf: now,
    exp: now + 600,
    iss: JWT_ISSUER,
    aud: JWT_AUDIENCE,
    sub: accountId,
  };
  for (const [name, value] of Object.entries(options.claims ?? {})) {
    if (value === undefined) delete payload[name];
    else payload[name] = value;
  }
  return jwt.sign(payload, options.secret ?? jwtSecretOf(api), { algorithm: options.algorithm ?? 'HS256' });
}

/** An unsigned (`alg: none`) token carrying otherwise valid claims. */
export function unsignedJwt(accountId: string, alg = 'none'): string {
  const now = Math.floor(Date.now() / 1000);
  const header = b64url(JSON.stringify({ alg, typ: 'JWT' }));
  const payload = b64url(
    JSON.stringify({ typ: JWT_TYPE, iat: now, nbf: now, exp: now + 600, iss: JWT_ISSUER, aud: JWT_AUDIENCE, sub: accountId }),
  );
  return `${header}.${payload}.`;
}

let rsaKeys: { privateKey: KeyObject; publicKey: KeyObject } | undefined;
function rsa() {
  rsaKeys ??= generateKeyPairSync('rsa', { modulusLength: 2048 });
  return rsaKeys;
}

/** Replaces one character of the token's signature (or of another segment). */
export function tamper(token: string, segment: 0 | 1 | 2 = 2): string {
  const parts = token.split('.');
  const part = parts[segment]!;
  const i = Math.floor(part.length / 2);
  parts[segment] = part.slice(0, i) + (part[i] === 'A' ? 'B' : 'A') + part.slice(i + 1);
  return parts.join('.');
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * A well-formed `pdk_live_` key with a correct checksum that was never issued: 44 base62 characters
 * and their base62 CRC32, as api/auth/api-key-format.ts builds keys.
 */
export function unknownApiKey(): string {
  let secret = '';
  for (const byte of randomBytes(44)) secret += BASE62[byte % 62];
  let n = crc32(secret);
  let checksum = '';
  for (let i = 0; i < 6; i++) {
    checksum = BASE62[n % 62] + checksum;
    n = Math.floor(n / 62);
  }
  return `pdk_live_${secret}${checksum}`;
}

/** The same key with its last (checksum) character changed. */
export function badChecksumKey(key: string): string {
  const last = key.at(-1);
  return key.slice(0, -1) + (last === 'a' ? 'b' : 'a');
}

export interface AuthTarget {
  path: string;
  body?: unknown;
  /** A WebSocket route's subprotocol: sent as a real upgrade, and a 101 is its acceptance. */
  upgrade?: string;
}

export interface AuthSuiteOptions {
  /** Label of the describe block; defaults to "METHOD path". */
  name?: string;
  /**
   * The API under test: start it at the top of the file (`const api = await startTestApi()`),
   * not in a before() hook, which would close it when the hook ends. A getter works too.
   */
  api: RunningApi | (() => RunningApi);
  method: string;
  /** The route's path; makeTarget may replace it (e.g. to fill in an id). */
  path: string;
  credential: CredentialKind;
  /** A valid body for the route, if it takes one. */
  body?: unknown;
  /**
   * Prepares, for each test, a resource of the suite's account that the request targets (a key to
   * delete, a sandbox to exec in) so a refusal is proven to come from the credential, not from a 404.
   */
  makeTarget?: (api: RunningApi, account: TestAccount) => Promise<Partial<AuthTarget>>;
  /** What a valid credential answers; any 2xx when omitted. */
  okStatus?: number;
  /**
   * Which tests to register: those where the credential is accepted (they reach what the route
   * does, a runtime included), those where it is refused (they stop at the credential), or both.
   */
  cases?: 'all' | 'accepted' | 'refused';
}

/**
 * Registers the shared credential tests for one route: a valid credential passes; none answers
 * missing_credential; the other kind answers wrong_credential_type; malformed, unknown, revoked,
 * expired and forged credentials answer invalid_credential.
 */
export function runAuthSuite(options: AuthSuiteOptions): void {
  const { method, credential } = options;
  const cases = options.cases ?? 'all';
  const accepted = cases !== 'refused';
  const refused = cases !== 'accepted';
  const name = options.name ?? `${method} ${options.path}`;
  const getApi = () => (typeof options.api === 'function' ? options.api() : options.api);

  describe(`auth suite: ${name} (${credential === 'apiKey' ? 'API key' : 'dashboard token'})`, () => {
    let api: RunningApi;
    let owner: TestAccount;

    before(async () => {
      api = getApi();
      owner = await newAccount(api.url, 'authsuite');
    });

    async function target(): Promise<AuthTarget> {
      const made = options.makeTarget ? await options.makeTarget(api, owner) : {};
      return { path: made.path ?? options.path, body: 'body' in made ? made.body : options.body, upgrade: made.upgrade };
    }

    async function send(authorization: string | undefined): Promise<JsonResponse> {
      const t = await target();
      const headers: Record<string, string> = {};
      if (authorization !== undefined) headers.authorization = authorization;
      return call(api.url, method, t.path, { headers, body: t.body, upgrade: t.upgrade });
    }

    const valid = () => (credential === 'apiKey' ? owner.key : owner.token);
    const other = () => (credential === 'apiKey' ? owner.token : owner.key);

    function assertAccepted(res: JsonResponse, what: string): void {
      if (options.okStatus !== undefined) {
        assert.equal(res.status, options.okStatus, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
      } else {
        // A WebSocket route accepts with 101 (call sends those as real upgrades).
        assert.ok((res.status >= 200 && res.status < 300) || res.status === 101, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
      }
    }

    if (accepted) {
      test('a valid credential is accepted', async () => {
        assertAccepted(await send(`Bearer ${valid()}`), 'valid credential');
      });

      test('the scheme is case-insensitive and may be followed by several spaces', async () => {
        assertAccepted(await send(`bearer ${valid()}`), 'lower-case scheme');
        assertAccepted(await send(`BEARER   ${valid()}`), 'upper-case scheme, three spaces');
      });

      test('control: a token crafted with the valid claims and secret is taken for a real one', async () => {
        const res = await send(`Bearer ${craftJwt(api, owner.id)}`);
        if (credential === 'dashboard') assertAccepted(res, 'crafted valid token');
        else assertProblem(res, 401, 'wrong_credential_type');
      });
    }
    if (!refused) return;

    test('no Authorization header answers 401 missing_credential', async () => {
      const res = await send(undefined);
      assertProblem(res, 401, 'missing_credential');
    });

    test('an empty Authorization header answers 401 missing_credential', async () => {
      assertProblem(await send(''), 401, 'missing_credential');
    });

    test(`a valid ${credential === 'apiKey' ? 'dashboard token' : 'API key'} answers 401 wrong_credential_type`, async () => {
      assertProblem(await send(`Bearer ${other()}`), 401, 'wrong_credential_type');
    });

    const malformed: [string, () => string][] = [
      ['a Basic header', () => `Basic ${b64url(`${owner.email}:${owner.password}`)}`],
      ['the valid credential under another scheme', () => `Token ${valid()}`],
      ['the valid credential without a scheme', () => valid()],
      ['"Bearer" alone', () => 'Bearer'],
      ['"Bearer" with a tab instead of a space', () => `Bearer\t${valid()}`],
      ['two credentials', () => `Bearer ${valid()} ${valid()}`],
      ['garbage', () => 'Bearer garbage'],
      ['three dots', () => 'Bearer ...'],
      ['a JWT-shaped string of garbage', () => 'Bearer abc.def.ghi'],
      ['a pdk_live_ key with a bad checksum', () => `Bearer ${badChecksumKey(owner.key)}`],
      ['a truncated pdk_live_ key', () => `Bearer ${owner.key.slice(0, -1)}`],
      ['a pdk_live_ key with a character outside base62', () => `Bearer ${owner.key.slice(0, 20)}-${owner.key.slice(21)}`],
      ['the bare prefix', () => 'Bearer pdk_live_'],
      ['a pdk_test_ key', () => `Bearer ${owner.key.replace('pdk_live_', 'pdk_test_')}`],
    ];
    for (const [label, header] of malformed) {
      test(`malformed: ${label} answers 401 invalid_credential`, async () => {
        assertProblem(await send(header()), 401, 'invalid_credential');
      });
    }

    if (credential === 'apiKey') {
      test('a well-formed API key that was never issued answers 401 invalid_credential', async () => {
        assertProblem(await send(`Bearer ${unknownApiKey()}`), 401, 'invalid_credential');
      });

      test('a revoked API key answers 401 invalid_credential', async () => {
        const created = await call(api.url, 'POST', '/v1/api-keys', { token: owner.token, body: { name: 'to revoke' } });
        assert.equal(created.status, 201);
        // Used once first, so that it sits in the shared cache when it is revoked.
        assertAccepted(await send(`Bearer ${created.body.key}`), 'the key before revocation');
        const revoked = await call(api.url, 'DELETE', `/v1/api-keys/${created.body.id}`, { token: owner.token });
        assert.equal(revoked.status, 204);
        assertProblem(await send(`Bearer ${created.body.key}`), 401, 'invalid_credential');
      });
    } else {
      // A dashboard route does not look an API key up: any well-formed key (valid, revoked or never
      // issued) is of the wrong kind. It is refused either way, and never accepted.
      test('a revoked or never-issued API key is refused with 401', async () => {
        const created = await call(api.url, 'POST', '/v1/api-keys', { token: owner.token, body: { name: 'to revoke' } });
        assert.equal(created.status, 201);
        const revoked = await call(api.url, 'DELETE', `/v1/api-keys/${created.body.id}`, { token: owner.token });
        assert.equal(revoked.status, 204);
        for (const key of [created.body.key as string, unknownApiKey()]) {
          const res = await send(`Bearer ${key}`);
          assert.equal(res.status, 401, JSON.stringify(res.body));
          assert.ok(['invalid_credential', 'wrong_credential_type'].includes(res.body.code), res.body.code);
        }
      });
    }

    // Forged and stale dashboard tokens: refused as invalid on every route, whatever kind it takes.

    const now = () => Math.floor(Date.now() / 1000);
    const forged: [string, () => string][] = [
      ['an expired token', () => craftJwt(api, owner.id, { claims: { iat: now() - 7200, nbf: now() - 7200, exp: now() - 3600 } })],
      ['a token expiring this very second', () => craftJwt(api, owner.id, { claims: { iat: now() - 60, exp: now() } })],
      ['a token not valid before an hour from now', () => craftJwt(api, owner.id, { claims: { nbf: now() + 3600 } })],
      ['an alg: none token', () => unsignedJwt(owner.id)],
      ['an alg: NONE token', () => unsignedJwt(owner.id, 'NONE')],
      ['an alg: none token with the real signature kept', () => {
        const real = craftJwt(api, owner.id).split('.');
        return `${unsignedJwt(owner.id).split('.').slice(0, 2).join('.')}.${real[2]}`;
      }],
      ['an RS256 token signed with an attacker key', () => craftJwt(api, owner.id, { algorithm: 'RS256', secret: rsa().privateKey })],
      ['an HS256 token keyed with a public key (RS/HS confusion)', () => {
        const pem = rsa().publicKey.export({ type: 'spki', format: 'pem' }).toString();
        const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
        const payload = craftJwt(api, owner.id).split('.')[1]!;
        const signature = createHmac('sha256', pem).update(`${header}.${payload}`).digest('base64url');
        return `${header}.${payload}.${signature}`;
      }],
      ['an HS512 token signed with the right secret', () => craftJwt(api, owner.id, { algorithm: 'HS512' })],
      ['an HS384 token signed with the right secret', () => craftJwt(api, owner.id, { algorithm: 'HS384' })],
      ['a token for another audience', () => craftJwt(api, owner.id, { claims: { aud: 'paddock-api' } })],
      ['a token with no audience', () => craftJwt(api, owner.id, { claims: { aud: undefined } })],
      ['a token from another issuer', () => craftJwt(api, owner.id, { claims: { iss: 'evil' } })],
      ['a token with no issuer', () => craftJwt(api, owner.id, { claims: { iss: undefined } })],
      ['a token of another type', () => craftJwt(api, owner.id, { claims: { typ: 'refresh' } })],
      ['a token with no type', () => craftJwt(api, owner.id, { claims: { typ: undefined } })],
      ['a token with no subject', () => craftJwt(api, owner.id, { claims: { sub: undefined } })],
      ['a token whose subject is not a string', () => craftJwt(api, owner.id, { claims: { sub: 42 } })],
      ['a token with a tampered signature', () => tamper(craftJwt(api, owner.id))],
      ['a token whose payload was swapped for another account', () => {
        const parts = craftJwt(api, owner.id).split('.');
        const payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString()) as Record<string, unknown>;
        payload.sub = `acct_${'0'.repeat(24)}`;
        return `${parts[0]}.${b64url(JSON.stringify(payload))}.${parts[2]}`;
      }],
      ['a token signed with another secret', () => craftJwt(api, owner.id, { secret: randomBytes(32).toString('hex') })],
      ['a token signed with a one-character secret', () => craftJwt(api, owner.id, { secret: 'x' })],
      ['a token with a non-JSON payload', () => {
        const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
        const payload = b64url('not json');
        const signature = createHmac('sha256', jwtSecretOf(api)).update(`${header}.${payload}`).digest('base64url');
        return `${header}.${payload}.${signature}`;
      }],
      ['a token with a long payload (8 KB)', () => craftJwt(api, owner.id, { claims: { pad: 'x'.repeat(8000) }, secret: 'another secret' })],
    ];
    for (const [label, token] of forged) {
      test(`forged: ${label} answers 401 invalid_credential`, async () => {
        assertProblem(await send(`Bearer ${token()}`), 401, 'invalid_credential');
      });
    }
  });
}

export interface TenantCheckOptions {
  /** Request method, e.g. DELETE. */
  method: string;
  /** The credential of the account asking (not the owner). */
  token: string;
  /** The route's path for one resource id. */
  path: (id: string) => string;
  /** An id that belongs to another account. */
  foreignId: string;
  /** A well-formed id that exists nowhere. */
  missingId: string;
  /** The expected 404 code, e.g. api_key_not_found. */
  code: string;
  body?: unknown;
}

/**
 * Another account's resource answers 404 exactly like a missing one: same status, code, title,
 * detail and extra members (ids in the detail are compared as placeholders), same content type.
 */
export async function assertForeignLikeMissing(baseUrl: string, options: TenantCheckOptions): Promise<void> {
  const ask = (id: string) => call(baseUrl, options.method, options.path(id), { token: options.token, body: options.body });
  const foreign = await ask(options.foreignId);
  const missing = await ask(options.missingId);
  assertProblem(foreign, 404, options.code);
  assertProblem(missing, 404, options.code);
  const normalise = (body: Record<string, unknown>, id: string) =>
    JSON.parse(JSON.stringify({ ...body, requestId: undefined }).replaceAll(id, '<id>')) as unknown;
  assert.deepEqual(normalise(foreign.body, options.foreignId), normalise(missing.body, options.missingId));
  assert.equal(foreign.headers.get('content-type'), missing.headers.get('content-type'));
}

/**
 * Registers a test that account B, asking for account A's resource, gets exactly the answer for a
 * missing one, and that A's resource is untouched and still A's to use afterwards.
 */
export function runTenantCheck(options: {
  name: string;
  api: RunningApi | (() => RunningApi);
  method: string;
  credential: CredentialKind;
  path: (id: string) => string;
  /** Creates a resource of `owner`; answers its id. */
  makeResource: (api: RunningApi, owner: TestAccount) => Promise<string>;
  missingId: () => string;
  code: string;
  body?: unknown;
  /** Proves the resource is still there and still the owner's after the foreign attempt. */
  ownerStillHasIt: (api: RunningApi, owner: TestAccount, id: string) => Promise<void>;
}): void {
  test(`tenant isolation: ${options.name}`, async () => {
    const api = typeof options.api === 'function' ? options.api() : options.api;
    const [owner, stranger] = await Promise.all([newAccount(api.url, 'owner'), newAccount(api.url, 'stranger')]);
    const id = await options.makeResource(api, owner);
    await assertForeignLikeMissing(api.url, {
      method: options.method,
      token: options.credential === 'apiKey' ? stranger.key : stranger.token,
      path: options.path,
      foreignId: id,
      missingId: options.missingId(),
      code: options.code,
      body: options.body,
    });
    await options.ownerStillHasIt(api, owner, id);
  });
}
