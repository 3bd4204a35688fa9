import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForeignKeyConstraintViolationException, UniqueConstraintViolationException } from '@mikro-orm/core';
import { errorAnswerer } from '../../api/middleware/errors.ts';
import type { AppContext } from '../../api/context.ts';
import type { Logger } from '../../shared/logger.ts';

// The one translator (api/middleware/errors.ts) makes the database's refusals that are answers
// into their codes, whether the driver's error comes bare (a repository's query) or inside the
// ORM's; any other refusal stays a fault.

const quiet = { error() {}, warn() {} } as unknown as Logger;
const answer = errorAnswerer(quiet);

function answered(err: unknown): { status: number; body: Record<string, unknown> } {
  const headers: Record<string, string> = {};
  const ctx = {
    state: { requestId: 'req_test' },
    req: { complete: true, destroyed: false },
    response: { get: (name: string) => headers[name] ?? '' },
    set(name: string | Record<string, string>, value?: string) {
      if (typeof name === 'string') headers[name] = value!;
      else Object.assign(headers, name);
    },
  } as unknown as AppContext & { body: Record<string, unknown> };
  answer(ctx, err);
  return { status: ctx.status, body: ctx.body };
}

const driverError = (code: string, constraint: string) => Object.assign(new Error(`violates ${constraint}`), { code, constraint });

test('a taken email (accounts_email_key) answers 409 email_taken, bare or inside the ORM', () => {
  for (const err of [driverError('23505', 'accounts_email_key'), new UniqueConstraintViolationException(driverError('23505', 'accounts_email_key'))]) {
    const { status, body } = answered(err);
    assert.equal(status, 409);
    assert.equal(body.code, 'email_taken');
    assert.equal(body.detail, 'An account with this email already exists');
  }
});

test('a key for an account that is gone (api_keys_account_id_fkey) answers 401 invalid_credential', () => {
  for (const err of [driverError('23503', 'api_keys_account_id_fkey'), new ForeignKeyConstraintViolationException(driverError('23503', 'api_keys_account_id_fkey'))]) {
    const { status, body } = answered(err);
    assert.equal(status, 401);
    assert.equal(body.code, 'invalid_credential');
  }
});

test("any other constraint's refusal, or a known constraint's with another code, is a fault (500)", () => {
  for (const err of [driverError('23505', 'api_keys_key_hash_key'), driverError('23503', 'sandboxes_account_id_fkey'), driverError('23514', 'accounts_email_key'), driverError('23505', 'toString')]) {
    const { status, body } = answered(err);
    assert.equal(status, 500);
    assert.equal(body.code, 'internal_error');
  }
});
