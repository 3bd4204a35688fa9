import assert from 'node:assert/strict';
import { call } from './http.ts';
import { uniqueEmail } from './config.ts';

export interface TestAccount {
  id: string;
  email: string;
  password: string;
  /** Dashboard session token. */
  token: string;
  /** A raw API key. */
  key: string;
  keyId: string;
}

/** Signs up a fresh account through the API and mints one API key for it. */
export async function newAccount(baseUrl: string, label = 'user'): Promise<TestAccount> {
  const email = uniqueEmail(label);
  const password = 'correct horse battery staple';
  const signup = await call(baseUrl, 'POST', '/v1/auth/signup', { body: { email, password } });
  assert.equal(signup.status, 201, JSON.stringify(signup.body));
  const token = signup.body.token as string;
  const key = await call(baseUrl, 'POST', '/v1/api-keys', { token, body: { name: 'test' } });
  assert.equal(key.status, 201, JSON.stringify(key.body));
  return { id: signup.body.account.id, email, password, token, key: key.body.key, keyId: key.body.id };
}

/** Asserts an RFC 9457 problem document with the given status and code. */
export function assertProblem(res: { status: number; headers: Headers; body: any }, status: number, code: string): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${JSON.stringify(res.body)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.code, code);
  assert.equal(res.body.status, status);
  assert.equal(typeof res.body.title, 'string');
  assert.equal(typeof res.body.detail, 'string');
  assert.equal(res.body.type, `urn:paddock:error:${code}`);
  assert.equal(res.body.requestId, res.headers.get('x-request-id'));
}
