import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApi } from '../helpers/stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { uniqueEmail } from '../helpers/config.ts';
import { rawExchange, rawRequest } from '../helpers/raw-http.ts';
import { craftJwt } from '../helpers/auth-suite.ts';

// Nothing a client sends makes the API answer 5xx: each malformed request gets its own problem.

const LIMIT = 4096;
const api = await startTestApi({ overrides: { PADDOCK_BODY_LIMIT_BYTES: String(LIMIT) } });
const account = await newAccount(api.url, 'badinput');
const PASSWORD = 'correct horse battery staple';

function assertNo5xx(res: JsonResponse, what: string): void {
  assert.ok(res.status < 500, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
}

/** A 400 whose first error names `field` (or, with field null, names nothing in particular). */
function assertInvalid(res: JsonResponse, location: string, field: string | null): void {
  assertProblem(res, 400, 'invalid_request');
  assert.ok(Array.isArray(res.body.errors) && res.body.errors.length > 0, JSON.stringify(res.body));
  assert.equal(res.body.errors[0].location, location);
  assert.equal(res.body.errors[0].field, field, JSON.stringify(res.body));
  if (field) assert.match(res.body.detail, new RegExp(`${location}\\.${field.replace(/[$.]/g, '\\$&')}`));
}

const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

interface BodyCase {
  label: string;
  path: '/v1/auth/signup' | '/v1/auth/login' | '/v1/api-keys';
  body: string | Buffer;
  contentType?: string;
  expect: [number, string];
  field?: string | null;
}

const validSignup = () => JSON.stringify({ email: uniqueEmail('bi'), password: PASSWORD });

const bodyCases: BodyCase[] = [
  { label: 'an unclosed object', path: '/v1/auth/signup', body: '{', expect: [400, 'invalid_json'] },
  { label: 'a truncated object', path: '/v1/auth/signup', body: '{"email": "a@b.test", "password": "x', expect: [400, 'invalid_json'] },
  { label: 'single quotes', path: '/v1/auth/login', body: "{'email': 'a@b.test'}", expect: [400, 'invalid_json'] },
  { label: 'a trailing comma', path: '/v1/auth/login', body: '{"email": "a@b.test",}', expect: [400, 'invalid_json'] },
  { label: 'two JSON documents', path: '/v1/auth/login', body: '{}{}', expect: [400, 'invalid_json'] },
  { label: 'whitespace only', path: '/v1/auth/login', body: '   \n ', expect: [400, 'invalid_json'] },
  // RFC 8259 lets a parser ignore a byte-order mark, and this one does: the body is read.
  { label: 'a byte-order mark (ignored)', path: '/v1/auth/login', body: `\uFEFF${JSON.stringify({ email: uniqueEmail(), password: 'x' })}`, expect: [401, 'invalid_login'] },
  { label: 'NaN', path: '/v1/api-keys', body: '{"name": NaN}', expect: [400, 'invalid_json'] },
  {
    label: 'bytes that are not UTF-8',
    path: '/v1/auth/signup',
    body: Buffer.concat([Buffer.from('{"email": "'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('@b.test", "password": "0123456789"}')]),
    expect: [400, 'invalid_json'],
  },
  { label: 'an overlong UTF-8 encoding', path: '/v1/api-keys', body: Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]), expect: [400, 'invalid_json'] },
  { label: 'an array', path: '/v1/auth/signup', body: '[]', expect: [400, 'invalid_request'], field: null },
  { label: 'an array of the right object', path: '/v1/auth/signup', body: `[${validSignup()}]`, expect: [400, 'invalid_request'], field: null },
  { label: 'a string', path: '/v1/auth/login', body: '"a@b.test"', expect: [400, 'invalid_request'], field: null },
  { label: 'a number', path: '/v1/api-keys', body: '42', expect: [400, 'invalid_request'], field: null },
  { label: 'true', path: '/v1/api-keys', body: 'true', expect: [400, 'invalid_request'], field: null },
  { label: 'null', path: '/v1/auth/signup', body: 'null', expect: [400, 'invalid_request'], field: null },
  { label: 'an empty body', path: '/v1/auth/signup', body: '', expect: [400, 'invalid_request'], field: 'email' },
  { label: 'an unknown field', path: '/v1/auth/signup', body: JSON.stringify({ email: uniqueEmail(), password: PASSWORD, role: 'admin' }), expect: [400, 'invalid_request'], field: 'role' },
  { label: 'an unknown field on login', path: '/v1/auth/login', body: JSON.stringify({ email: uniqueEmail(), password: PASSWORD, remember: true }), expect: [400, 'invalid_request'], field: 'remember' },
  { label: 'a __proto__ field', path: '/v1/auth/signup', body: `{"__proto__": {"admin": true}, "email": "${uniqueEmail()}", "password": "${PASSWORD}"}`, expect: [400, 'invalid_request'], field: '__proto__' },
  { label: 'a constructor field', path: '/v1/api-keys', body: '{"constructor": {"prototype": {"admin": true}}}', expect: [400, 'invalid_request'], field: 'constructor' },
  { label: 'a number for the email', path: '/v1/auth/signup', body: JSON.stringify({ email: 123, password: PASSWORD }), expect: [400, 'invalid_request'], field: 'email' },
  { label: 'null for the email', path: '/v1/auth/login', body: JSON.stringify({ email: null, password: PASSWORD }), expect: [400, 'invalid_request'], field: 'email' },
  { label: 'an array for the email', path: '/v1/auth/signup', body: JSON.stringify({ email: [uniqueEmail()], password: PASSWORD }), expect: [400, 'invalid_request'], field: 'email' },
  { label: 'an operator object for the email', path: '/v1/auth/login', body: JSON.stringify({ email: { $ne: '' }, password: PASSWORD }), expect: [400, 'invalid_request'], field: 'email' },
  { label: 'a number for the password', path: '/v1/auth/signup', body: JSON.stringify({ email: uniqueEmail(), password: 1234567890123 }), expect: [400, 'invalid_request'], field: 'password' },
  { label: 'an object for the password', path: '/v1/auth/login', body: JSON.stringify({ email: uniqueEmail(), password: { length: 12 } }), expect: [400, 'invalid_request'], field: 'password' },
  { label: 'a boolean for the key name', path: '/v1/api-keys', body: JSON.stringify({ name: true }), expect: [400, 'invalid_request'], field: 'name' },
  { label: 'an email with a NUL', path: '/v1/auth/signup', body: JSON.stringify({ email: `a\u0000${uniqueEmail()}`, password: PASSWORD }), expect: [400, 'invalid_request'], field: 'email' },
  { label: 'a huge email', path: '/v1/auth/signup', body: JSON.stringify({ email: `${'a'.repeat(3500)}@b.test`, password: PASSWORD }), expect: [400, 'invalid_request'], field: 'email' },
  { label: 'a huge password', path: '/v1/auth/login', body: JSON.stringify({ email: uniqueEmail(), password: 'p'.repeat(3500) }), expect: [400, 'invalid_request'], field: 'password' },
  { label: 'a huge key name', path: '/v1/api-keys', body: JSON.stringify({ name: 'n'.repeat(3500) }), expect: [400, 'invalid_request'], field: 'name' },
  { label: 'deeply nested arrays', path: '/v1/auth/signup', body: deepArray(1800), expect: [400, 'invalid_request'], field: null },
  { label: 'deeply nested arrays in a field', path: '/v1/api-keys', body: `{"name": ${deepArray(1800)}}`, expect: [400, 'invalid_request'], field: 'name' },
  { label: 'deeply nested objects', path: '/v1/api-keys', body: `${'{"a":'.repeat(600)}1${'}'.repeat(600)}`, expect: [400, 'invalid_request'], field: 'a' },
  { label: 'text/plain', path: '/v1/auth/signup', body: validSignup(), contentType: 'text/plain', expect: [415, 'unsupported_media_type'] },
  { label: 'a form', path: '/v1/auth/login', body: 'email=a%40b.test&password=x', contentType: 'application/x-www-form-urlencoded', expect: [415, 'unsupported_media_type'] },
  { label: 'multipart', path: '/v1/api-keys', body: '--x\r\n\r\n--x--', contentType: 'multipart/form-data; boundary=x', expect: [415, 'unsupported_media_type'] },
  { label: 'no Content-Type', path: '/v1/api-keys', body: '{"name":"x"}', contentType: '', expect: [415, 'unsupported_media_type'] },
  { label: 'application/jsonx', path: '/v1/api-keys', body: '{"name":"x"}', contentType: 'application/jsonx', expect: [415, 'unsupported_media_type'] },
  { label: 'form data labelled JSON', path: '/v1/auth/login', body: 'email=a%40b.test', contentType: 'application/json', expect: [400, 'invalid_json'] },
];

for (const c of bodyCases) {
  test(`body: ${c.label} on ${c.path} answers ${c.expect[0]} ${c.expect[1]}`, async () => {
    const headers: Record<string, string> = {};
    if (c.contentType !== '') headers['content-type'] = c.contentType ?? 'application/json';
    if (c.path === '/v1/api-keys') headers.authorization = `Bearer ${account.token}`;
    const res = await rawRequest(api.url, 'POST', c.path, { headers, body: c.body });
    assertNo5xx(res, c.label);
    if (c.field !== undefined) assertInvalid(res, 'body', c.field);
    else assertProblem(res, c.expect[0], c.expect[1]);
    // An error never echoes a large input back.
    assert.ok(JSON.stringify(res.body).length < 1500, `answer of ${JSON.stringify(res.body).length} characters`);
  });
}

test('with the default 1 MiB limit: huge strings and JSON nested 300,000 deep answer 400, quickly', async () => {
  const roomy = await startTestApi();
  const token = (await newAccount(roomy.url, 'roomy')).token;
  const cases: [string, string, string, string | null][] = [
    ['/v1/auth/signup', JSON.stringify({ email: `${'a'.repeat(900_000)}@b.test`, password: PASSWORD }), 'email', 'email'],
    ['/v1/auth/login', JSON.stringify({ email: uniqueEmail(), password: 'p'.repeat(900_000) }), 'password', 'password'],
    ['/v1/api-keys', JSON.stringify({ name: '\u2028'.repeat(300_000) }), 'name', 'name'],
    ['/v1/auth/signup', deepArray(300_000), 'top', null],
    ['/v1/api-keys', `{"name": ${deepArray(300_000)}}`, 'name', 'name'],
    ['/v1/api-keys', `{"name": "x", "extra": ${'{"a":'.repeat(150_000)}1${'}'.repeat(150_000)}}`, 'extra', 'extra'],
  ];
  for (const [path, body, what, field] of cases) {
    const started = Date.now();
    const res = await rawRequest(roomy.url, 'POST', path, {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body,
    });
    assertNo5xx(res, what);
    assertInvalid(res, 'body', field);
    assert.ok(JSON.stringify(res.body).length < 1500, 'the answer does not echo the input');
    assert.ok(Date.now() - started < 5000, `${what} took ${Date.now() - started} ms`);
  }
});

test('Content-Type variants of JSON are accepted: charset, upper case, +json', async () => {
  for (const type of ['application/json; charset=utf-8', 'Application/JSON', 'application/merge-patch+json']) {
    const res = await rawRequest(api.url, 'POST', '/v1/auth/signup', { headers: { 'content-type': type }, body: validSignup() });
    assert.equal(res.status, 201, `${type}: ${res.status} ${JSON.stringify(res.body)}`);
  }
});

test('a body of exactly PADDOCK_BODY_LIMIT_BYTES is read; one byte more answers 413 payload_too_large', async () => {
  const padded = (size: number) => {
    const base = JSON.stringify({ name: '' });
    return JSON.stringify({ name: 'n'.repeat(size - base.length) });
  };
  const exact = await rawRequest(api.url, 'POST', '/v1/api-keys', {
    headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
    body: padded(LIMIT),
  });
  assert.equal(Buffer.byteLength(padded(LIMIT)), LIMIT);
  assertInvalid(exact, 'body', 'name'); // read and validated: the name is too long, not the body
  const over = await rawRequest(api.url, 'POST', '/v1/api-keys', {
    headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
    body: padded(LIMIT + 1),
  });
  assertProblem(over, 413, 'payload_too_large');
  assert.equal(over.body.limitBytes, LIMIT);
});

test('a large body answers 413 whether its length is declared or it arrives chunked', async () => {
  const body = JSON.stringify({ email: uniqueEmail(), password: 'x'.repeat(LIMIT * 4) });
  const declared = await call(api.url, 'POST', '/v1/auth/signup', { body });
  assertProblem(declared, 413, 'payload_too_large');
  const chunked = await rawRequest(api.url, 'POST', '/v1/auth/signup', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: uniqueEmail(), password: 'x'.repeat(LIMIT) }),
    chunked: true,
  });
  assertProblem(chunked, 413, 'payload_too_large');
  // A big body of the wrong type is still too large first.
  const typed = await call(api.url, 'POST', '/v1/auth/login', { body, headers: { 'content-type': 'text/plain' } });
  assertProblem(typed, 413, 'payload_too_large');
  // The API is none the worse.
  assert.equal((await call(api.url, 'GET', '/healthz')).status, 200);
});

test('a body on a GET or DELETE is not read as a request of its own, and answers no 5xx', async () => {
  // The body of the first request spells out a second request: it must not be answered as one.
  const smuggled = `GET /v1/api-keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${account.token}\r\n\r\n`;
  const first = `GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${account.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(smuggled)}\r\n\r\n${smuggled}`;
  const second = `GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;
  const responses = await rawExchange(api.url, first + second, 3);
  assert.equal(responses.length, 2, responses.map((r) => r.head).join('\n---\n'));
  const [account0, health] = responses;
  assertNo5xx(account0!, 'GET with a body');
  if (account0!.status >= 400) assertProblem(account0!, 400, 'invalid_request');
  else assert.equal(account0!.body.id, account.id);
  assert.equal(health!.status, 200);
  assert.deepEqual(health!.body, { status: 'ok' });

  const spare = await call(api.url, 'POST', '/v1/api-keys', { token: account.token, body: { name: 'spare' } });
  const del = await rawRequest(api.url, 'DELETE', `/v1/api-keys/${spare.body.id}`, {
    headers: { authorization: `Bearer ${account.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ reason: 'test' }),
  });
  assertNo5xx(del, 'DELETE with a body');
  if (del.status >= 400) assertProblem(del, 400, 'invalid_request');
  else assert.equal(del.status, 204);
});

test('unknown query parameters answer 400 invalid_request naming them, on every route', async () => {
  const cases: [string, string, string | undefined, unknown][] = [
    ['POST', '/v1/auth/signup?debug=1', undefined, { email: uniqueEmail(), password: PASSWORD }],
    ['POST', '/v1/auth/login?next=%2Fadmin', undefined, { email: uniqueEmail(), password: PASSWORD }],
    ['POST', '/v1/api-keys?scope=all', account.token, {}],
    ['GET', '/v1/api-keys?limit=10', account.token, undefined],
    ['GET', '/v1/account?__proto__=x', account.key, undefined],
  ];
  for (const [method, path, token, body] of cases) {
    const res = await call(api.url, method, path, { token, body });
    const name = new URL(path, api.url).searchParams.keys().next().value!;
    assertInvalid(res, 'query', name);
  }
  // Several at once, and repeated ones, are refused too.
  const many = await call(api.url, 'GET', '/v1/account?a=1&b=2&a=3', { token: account.key });
  assertProblem(many, 400, 'invalid_request');
  assert.match(many.body.detail, /"a"/);
  assert.match(many.body.detail, /"b"/);
  // Odd encodings in the query are input errors, never 5xx.
  for (const q of ['%', '%ZZ=1', '%00=%00', 'a[b]=1', '=', '&&&']) {
    const res = await call(api.url, 'GET', `/v1/account?${q}`, { token: account.key });
    assertNo5xx(res, q);
    if (res.status !== 200) assertProblem(res, 400, 'invalid_request');
  }
});

test('a body in a coding the server does not undo, or a charset other than UTF-8, answers 415, and is not read as plain', async () => {
  const body = validSignup();
  const variants: Record<string, string>[] = [{ 'content-encoding': 'gzip' }, { 'content-encoding': 'br' }, { 'content-type': 'application/json; charset=utf-16' }, { 'content-type': 'application/json; charset=latin1' }];
  for (const headers of variants) {
    const res = await rawRequest(api.url, 'POST', '/v1/auth/signup', { headers: { 'content-type': 'application/json', ...headers }, body });
    assertProblem(res, 415, 'unsupported_media_type');
  }
  const [chunkedGzip] = await rawExchange(
    api.url,
    `POST /v1/auth/signup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
  );
  assert.ok(chunkedGzip!.status === 415 || chunkedGzip!.status === 400, `${chunkedGzip!.status} ${JSON.stringify(chunkedGzip!.body)}`);
  assert.equal((await rawRequest(api.url, 'POST', '/v1/auth/signup', { headers: { 'content-type': 'application/json', 'content-encoding': 'identity' }, body: validSignup() })).status, 201);
});

test('two Authorization headers answer 400: which credential was meant is not guessed', async () => {
  const other = await newAccount(api.url, 'badinput-second');
  const [res] = await rawExchange(api.url, `GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${account.key}\r\nAuthorization: Bearer ${other.key}\r\nConnection: close\r\n\r\n`);
  assert.equal(res!.status, 400, JSON.stringify(res!.body));
  assert.equal(res!.body.code, 'invalid_request');
  assert.match(res!.body.detail, /one Authorization header/);
});

test('Authorization headers with odd spacing, case or bytes: accepted when RFC-valid, else 401 invalid_credential', async () => {
  const ok = [`Bearer ${account.key}`, `bearer ${account.key}`, `BeArEr ${account.key}`, `Bearer    ${account.key}`, `  Bearer ${account.key}  `];
  for (const header of ok) {
    const res = await call(api.url, 'GET', '/v1/account', { headers: { authorization: header } });
    assert.equal(res.status, 200, `${JSON.stringify(header)}: ${res.status}`);
  }
  const bad = [
    `Bearer\t${account.key}`,
    `Bearer:${account.key}`,
    `Bearer=${account.key}`,
    `Bearer "${account.key}"`,
    `Bearer ${account.key},`,
    `Bearer ${account.key}, Bearer ${account.key}`,
    `Bearer\u00a0${account.key}`,
    `Bearer ${account.key}\u00a0`,
    `Bearer ${account.key.replace('pdk', 'pdk\u00ad')}`,
    `Bearer ${account.key.toUpperCase()}`,
  ];
  for (const header of bad) {
    const res = await call(api.url, 'GET', '/v1/account', { headers: { authorization: header } });
    assertProblem(res, 401, 'invalid_credential');
  }
});

test('Authorization header bytes outside Latin-1 (raw UTF-8, a right-to-left mark, emoji) answer 401 invalid_credential', async () => {
  for (const token of [`pdk_live_ключ${account.key.slice(13)}`, `\u202e${account.key}`, `${account.key}🔑`, '🔑']) {
    const request = Buffer.concat([
      Buffer.from('GET /v1/account HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer '),
      Buffer.from(token, 'utf8'),
      Buffer.from('\r\n\r\n'),
    ]);
    const [res] = await rawExchange(api.url, request);
    assert.ok(res, 'an answer');
    assertProblem(res, 401, 'invalid_credential');
  }
});

test('a JWT with a long payload answers 401; one beyond the header size limit is refused without a 5xx', async () => {
  const long = craftJwt(api, account.id, { claims: { pad: 'x'.repeat(6000) } });
  // Valid signature and claims, only long: a dashboard token is still refused on an API-key route.
  assertProblem(await call(api.url, 'GET', '/v1/account', { token: long }), 401, 'wrong_credential_type');
  const forged = `${long.slice(0, -4)}AAAA`;
  assertProblem(await call(api.url, 'GET', '/v1/api-keys', { token: forged }), 401, 'invalid_credential');
  const absurd = craftJwt(api, account.id, { claims: { pad: 'x'.repeat(64 * 1024) }, secret: 'another secret' });
  const res = await call(api.url, 'GET', '/v1/api-keys', { token: absurd });
  assertNo5xx(res, 'a 90 KB JWT');
  assert.equal(res.status, 431, 'Node refuses headers beyond its limit');
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.code, 'headers_too_large');
  assert.equal(res.body.requestId, res.headers.get('x-request-id'));
  assert.equal((await call(api.url, 'GET', '/healthz')).status, 200);
});

test('odd key ids and paths answer 404, never 5xx', async () => {
  const auth = { authorization: `Bearer ${account.token}` };
  for (const id of ['%00', '%ff', '%C0%AF', '%E2%80%AE', '..', '.%2e', 'key_%20', encodeURIComponent('key_\u0000'), `KEY_${'A'.repeat(24)}`]) {
    const res = await rawRequest(api.url, 'DELETE', `/v1/api-keys/${id}`, { headers: auth });
    assertProblem(res, 404, 'api_key_not_found');
  }
  for (const path of ['/v1/%00', '/v1/account%00', '/%2e%2e/%2e%2e/etc/passwd', '//v1//account', '/v1/../v1/account', `/v1/${'a'.repeat(4000)}`]) {
    const res = await rawRequest(api.url, 'GET', path, { headers: { authorization: `Bearer ${account.key}` } });
    assertNo5xx(res, path);
    if (res.status !== 200) assertProblem(res, 404, 'not_found');
  }
});

test('an X-Request-Id that is too long, has spaces or odd bytes is replaced, never echoed', async () => {
  const request = Buffer.concat([
    Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Request-Id: '),
    Buffer.from('ïd\u2028<b>', 'utf8'),
    Buffer.from('\r\n\r\n'),
  ]);
  const [res] = await rawExchange(api.url, request);
  assert.equal(res!.status, 200);
  assert.match(res!.headers.get('x-request-id') ?? '', /^req_[0-9a-f]{24}$/);
});
