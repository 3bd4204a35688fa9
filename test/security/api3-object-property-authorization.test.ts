import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { allRoutes } from '../../api/routes/index.ts';
import type { Route } from '../../api/routes/route.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { uniqueEmail } from '../helpers/config.ts';
import { credentialFor, routeKey, routesWhere, validRequestFor, Workspace } from './fixtures.ts';

// OWASP API3:2023 Broken Object Property Level Authorization.
//  - Mass assignment: an unknown property is refused (400 naming it) on every route with a body,
//    and an unknown query parameter on every route; nothing is created or changed by such a request.
//  - Excessive data exposure: a scripted session through every route, with secrets planted, and
//    every answer (body and headers) and every log line of the API and the worker is searched for
//    them: the password, raw keys, session tokens, secret values, the JWT secret, the secrets key,
//    the database and Redis URLs, the stored password hash, key hashes and secret ciphertexts. A
//    success never carries a property its documented schema does not have.

const logLines: string[] = [];
// The sweeps send many requests to the routes of the account bucket (keys, secrets, allowlist,
// webhooks): a bucket wide enough that they never meet its limit.
const stack = await startSandboxStack({ logLines, overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '20', PADDOCK_RATE_ACCOUNT_PER_MIN: '1000' } });
const api = stack.apis[0]!;
const owner = await newAccount(stack.url, 'api3');
const w = new Workspace(stack.url, owner);

const bodyRoutes = routesWhere((r) => r.spec.body !== undefined);
const UNKNOWN = ['accountId', 'id', 'role', 'isAdmin', 'admin', 'state', 'status', 'passwordHash', 'keyHash', 'createdAt', 'limit', 'concurrentSandboxesLimit'];

test('every route with a body refuses an unknown property with 400 naming it, and does nothing', async () => {
  assert.ok(bodyRoutes.length >= 9);
  await w.sandboxId();
  const before = await snapshot();
  for (const route of bodyRoutes) {
    const req = await validRequestFor(route, w);
    // (A name the valid body has already is no unknown property: a JSON-RPC message's id.)
    for (const name of UNKNOWN.filter((n) => !Object.hasOwn(req.body as object, n))) {
      const res = await call(stack.url, req.method, req.path, { token: credentialFor(route, owner), body: { ...(req.body as object), [name]: 'x' } });
      assertProblem(res, 400, 'invalid_request');
      assert.equal(res.body.errors[0].location, 'body', `${routeKey(route)} ${name}`);
      assert.equal(res.body.errors[0].field, name, `${routeKey(route)} ${name}`);
    }
    // Prototype keys, sent as JSON text (an object literal would not carry them as own keys).
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const text = `{"${key}": {"isAdmin": true, "accountId": "acct_${'0'.repeat(24)}"}, ${JSON.stringify(req.body).slice(1)}`.replace(', }', '}');
      const res = await rawRequest(stack.url, req.method, req.path, {
        headers: { 'content-type': 'application/json', ...(credentialFor(route, owner) ? { authorization: `Bearer ${credentialFor(route, owner)}` } : {}) },
        body: text,
      });
      assertProblem(res, 400, 'invalid_request');
      assert.equal(res.body.errors[0].field, key, `${routeKey(route)} ${key}`);
    }
  }
  assert.deepEqual(await snapshot(), before, 'nothing was created or changed');
  assert.equal(({} as Record<string, unknown>).isAdmin, undefined, 'no prototype was polluted');
});

test('every route refuses an unknown query parameter with 400 naming it', async () => {
  for (const route of allRoutes) {
    const req = await validRequestFor(route, w);
    for (const name of ['accountId', 'admin', 'debug']) {
      const path = `${req.path}${req.path.includes('?') ? '&' : '?'}${name}=1`;
      const res = await call(stack.url, req.method, path, { token: credentialFor(route, owner), body: req.body, upgrade: req.upgrade });
      assertProblem(res, 400, 'invalid_request');
      assert.equal(res.body.errors[0].location, 'query', `${routeKey(route)} ${name}`);
      assert.equal(res.body.errors[0].field, name, `${routeKey(route)} ${name}`);
    }
  }
});

test('"__proto__" is refused as a name wherever a map takes names (metadata, env, exec env, secret names), never silently dropped', async () => {
  const id = await w.sandboxId();
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${owner.key}` };
  const before = await snapshot();
  const cases: [string, string, string, string][] = [
    ['POST', '/v1/sandboxes?wait=false', '{"metadata": {"ok": "1", "__proto__": "x"}}', 'metadata.__proto__'],
    ['POST', '/v1/sandboxes?wait=false', '{"env": {"__proto__": "x"}}', 'env.__proto__'],
    ['POST', `/v1/sandboxes/${id}/exec`, '{"command": ["env"], "env": {"A": "1", "__proto__": "x"}}', 'env.__proto__'],
    ['POST', '/v1/secrets', '{"name": "__proto__", "value": "x"}', 'name'],
  ];
  for (const [method, path, body, field] of cases) {
    const res = await rawRequest(stack.url, method, path, { headers, body });
    assertProblem(res, 400, 'invalid_request');
    assert.equal(res.body.errors[0].field, field, body);
  }
  assert.deepEqual(await snapshot(), before);
  // "constructor" and the like are ordinary names, kept as given.
  const kept = await call(stack.url, 'POST', '/v1/sandboxes?wait=false', { token: owner.key, body: { metadata: { constructor: 'c', toString: 't' } } });
  assert.equal(kept.status, 201, JSON.stringify(kept.body));
  assert.deepEqual(kept.body.metadata, { constructor: 'c', toString: 't' });
  await call(stack.url, 'DELETE', `/v1/sandboxes/${kept.body.id}?wait=false`, { token: owner.key });
});

test('a value cannot reassign what the server owns: metadata and env are data, not the sandbox', async () => {
  const stranger = await newAccount(stack.url, 'api3-other');
  const res = await call(stack.url, 'POST', '/v1/sandboxes?wait=false', {
    token: owner.key,
    body: { metadata: { accountId: stranger.id, state: 'destroyed', id: 'sbx_x' }, env: { PADDOCK_ACCOUNT: stranger.id } },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.state, 'active');
  assert.match(res.body.id, /^sbx_[0-9a-z]{24}$/);
  assert.deepEqual(res.body.metadata, { accountId: stranger.id, state: 'destroyed', id: 'sbx_x' });
  assert.equal((await call(stack.url, 'GET', `/v1/sandboxes/${res.body.id}`, { token: owner.key })).status, 200);
  assertProblem(await call(stack.url, 'GET', `/v1/sandboxes/${res.body.id}`, { token: stranger.key }), 404, 'sandbox_not_found');
  await call(stack.url, 'DELETE', `/v1/sandboxes/${res.body.id}?wait=false`, { token: owner.key });
});

/** What the owner can see of its own state. */
async function snapshot() {
  const [keys, sandboxes, secrets, allowlist, account] = await Promise.all([
    call(stack.url, 'GET', '/v1/api-keys', { token: owner.token }),
    call(stack.url, 'GET', '/v1/sandboxes?state=all', { token: owner.key }),
    call(stack.url, 'GET', '/v1/secrets', { token: owner.key }),
    call(stack.url, 'GET', '/v1/allowlist', { token: owner.key }),
    call(stack.url, 'GET', '/v1/account', { token: owner.key }),
  ]);
  return {
    keys: keys.body.data.map((k: { id: string }) => k.id),
    sandboxes: sandboxes.body.data.map((s: { id: string; state: string }) => `${s.id} ${s.state}`),
    secrets: secrets.body.data,
    allowlist: allowlist.body,
    active: account.body.usage.concurrentSandboxes.active,
  };
}

// ---------------------------------------------------------------------------------------------

type JsonSchema = {
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
};

/** Paths of properties in `value` that `schema` does not declare. */
function undeclared(value: unknown, schema: JsonSchema, path = '$'): string[] {
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) {
    const each = alternatives.map((s) => undeclared(value, s, path));
    return each.find((e) => e.length === 0) ?? each.sort((a, b) => a.length - b.length)[0] ?? [];
  }
  if (Array.isArray(value)) return schema.items ? value.flatMap((v, i) => undeclared(v, schema.items!, `${path}[${i}]`)) : [];
  if (value === null || typeof value !== 'object') return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    const declared = schema.properties?.[k];
    if (declared) out.push(...undeclared(v, declared, `${path}.${k}`));
    else if (typeof schema.additionalProperties === 'object') out.push(...undeclared(v, schema.additionalProperties, `${path}.${k}`));
    else if (schema.properties || schema.additionalProperties === false) out.push(`${path}.${k}`);
  }
  return out;
}

test('a scripted session through every route: no secret, hash or internal in any answer or log line', async () => {
  const answers: { what: string; res: JsonResponse; route?: Route }[] = [];
  const record = (what: string, res: JsonResponse, route?: Route) => answers.push({ what, res, route });

  // Secrets of every kind, planted through the API.
  const email = uniqueEmail('session');
  const password = 'planted password 9f2c41';
  const signup = await call(stack.url, 'POST', '/v1/auth/signup', { body: { email, password } });
  record('signup', signup);
  const login = await call(stack.url, 'POST', '/v1/auth/login', { body: { email, password } });
  record('login', login);
  const created = await call(stack.url, 'POST', '/v1/api-keys', { token: login.body.token, body: { name: 'session' } });
  record('create key', created);
  const me = { id: signup.body.account.id, email, password, token: login.body.token, key: created.body.key, keyId: created.body.id };
  const space = new Workspace(stack.url, me);
  const sandboxId = await space.sandboxId();
  const secretValue = 'planted-secret-value-77c0';
  record('secret', await call(stack.url, 'POST', '/v1/secrets', { token: me.key, body: { name: 'PLANTED', value: secretValue } }));
  record('sandbox secret', await call(stack.url, 'POST', '/v1/secrets', { token: me.key, body: { name: 'PLANTED_TOO', value: `${secretValue}-2`, sandboxId } }));
  record('exec env', await call(stack.url, 'POST', `/v1/sandboxes/${sandboxId}/exec`, { token: me.key, body: { command: 'env; echo "$PLANTED" >&2' } }));
  const stream = await fetch(`${stack.url}/v1/sandboxes/${sandboxId}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${me.key}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
    body: JSON.stringify({ command: 'printf %s "$PLANTED_TOO"' }),
  });
  record('exec stream', { status: stream.status, headers: stream.headers, body: await stream.text() });

  // Every route, as its owner would use it; then the same with the wrong credential, a missing
  // object and a bad body, for the error answers.
  for (const route of allRoutes) {
    const req = await validRequestFor(route, space);
    const token = credentialFor(route, me);
    record(routeKey(route), await call(stack.url, req.method, req.path, { token, body: req.body, upgrade: req.upgrade }), route);
    record(`${routeKey(route)} no credential`, await call(stack.url, req.method, req.path, { body: req.body, upgrade: req.upgrade }));
    if (route.spec.body) record(`${routeKey(route)} bad body`, await call(stack.url, req.method, req.path, { token, body: { nonsense: [1, 2, 3] } }));
    record(`${routeKey(route)} missing object`, await call(stack.url, req.method, req.path.replace(/(sbx|key)_[0-9a-z]{24}/, '$1_000000000000000000000000'), { token, body: req.body, upgrade: req.upgrade }));
  }
  record('metrics', await call(stack.url, 'GET', '/metrics'));
  record('openapi', await call(stack.url, 'GET', '/v1/openapi.json'));

  // What the database holds, which must never travel back.
  const em = api.deps.orm.em.fork();
  const [account] = await em.getConnection().execute<{ password_hash: string }[]>('select password_hash from accounts where id = ?', [me.id]);
  const ciphertexts = await em.getConnection().execute<{ ciphertext: Buffer }[]>('select ciphertext from secrets where account_id = ?', [me.id]);
  assert.ok(ciphertexts.length >= 2);
  const config = stack.config;
  const never: [string, string][] = [
    ['the password', password],
    ['the password hash', account!.password_hash],
    ['the key hash', createHash('sha256').update(me.key).digest('hex')],
    ['the key hash of the first key', createHash('sha256').update(owner.key).digest('hex')],
    ['a secret value', secretValue],
    ['the JWT secret', config.PADDOCK_JWT_SECRET!],
    ['the secrets key', config.PADDOCK_SECRETS_KEY!],
    ['the database URL', config.DATABASE_URL],
    ['the Redis URL', config.REDIS_URL],
    ...ciphertexts.flatMap((c, i): [string, string][] => [
      [`ciphertext ${i} (hex)`, c.ciphertext.toString('hex')],
      [`ciphertext ${i} (base64)`, c.ciphertext.toString('base64')],
    ]),
  ];
  // Shown only in the answers that make them (those whose label starts with one of these).
  const once: [string, string, string[]][] = [
    ['the raw key', me.key, ['create key']],
    // (Tokens issued in the same second for one account are the very same string.)
    ['the session token', me.token, ['login', 'signup', 'POST /v1/auth/']],
    ['the signup token', signup.body.token, ['signup', 'login', 'POST /v1/auth/']],
    ["the fixture's raw key", owner.key, []],
  ];

  for (const { what, res, route } of answers) {
    const text = `${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${typeof res.body === 'string' ? res.body : JSON.stringify(res.body)}`;
    for (const [label, value] of never) assert.ok(!text.includes(value), `${what}: the answer holds ${label}`);
    for (const [label, value, allowed] of once) {
      if (!allowed.some((a) => what.startsWith(a))) assert.ok(!text.includes(value), `${what}: the answer holds ${label}`);
    }
    for (const word of ['passwordHash', 'password_hash', 'keyHash', 'key_hash', 'ciphertext', 'revokedAt']) {
      assert.ok(!text.includes(word), `${what}: the answer mentions ${word}`);
    }
    assert.doesNotMatch(text, /\n\s+at .*\(|node_modules|\/work\/|\.ts:\d+/, `${what}: internals`);
    // A success carries exactly what its schema documents.
    if (route && res.status >= 200 && res.status < 300 && typeof res.body === 'object') {
      const schema = route.spec.responses[res.status]?.schema;
      assert.ok(schema, `${what}: ${res.status} is not documented`);
      const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
      assert.deepEqual(undeclared(res.body, json), [], `${what}: undocumented properties`);
    }
  }
  const exec = answers.find((a) => a.what === 'exec env')!.res.body;
  assert.match(exec.stdout, /^PLANTED=\*\*\*$/m, 'the secret is masked in the output');
  assert.equal(exec.stderr, '***\n');
  const lines = (answers.find((a) => a.what === 'exec stream')!.res.body as string).trim().split('\n').map((l) => JSON.parse(l) as { type: string; data?: string });
  assert.equal(lines.filter((l) => l.type === 'stdout').map((l) => l.data).join(''), '***', 'masked in the stream too');

  // The logs of the API and the worker, at debug level.
  assert.ok(logLines.length > 50, `only ${logLines.length} log lines`);
  for (const line of logLines) {
    for (const [label, value] of [...never, ...once.map(([l, v]): [string, string] => [l, v])]) {
      assert.ok(!line.includes(value), `a log line holds ${label}: ${line.slice(0, 300)}`);
    }
  }
});
