import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SecretCipher, secretContext } from '../../shared/secrets/cipher.ts';
import { ConfigError, parseConfig } from '../../shared/config.ts';

// Rotation of PADDOCK_SECRETS_KEY: the current key encrypts, the previous ones still decrypt.

const key = () => randomBytes(32).toString('hex');
const [OLD, NEW, OTHER] = [key(), key(), key()];
const CONTEXT = secretContext('acct_1', null, 'API_TOKEN');

test('a value encrypted under the old key decrypts once the old key is listed as previous, and not without it', () => {
  const stored = new SecretCipher(OLD).encrypt('tok-old-1', CONTEXT);
  assert.throws(() => new SecretCipher(NEW).decrypt(stored, CONTEXT), /authenticate/);
  const rotating = new SecretCipher(NEW, [OLD]);
  assert.equal(rotating.decrypt(stored, CONTEXT), 'tok-old-1');
  assert.deepEqual(rotating.open(stored, CONTEXT), { plaintext: 'tok-old-1', current: false });
  // Any position in the list of previous keys.
  assert.equal(new SecretCipher(NEW, [OTHER, OLD]).decrypt(stored, CONTEXT), 'tok-old-1');
  assert.throws(() => new SecretCipher(NEW, [OTHER]).decrypt(stored, CONTEXT), /authenticate/);
});

test('new values are encrypted with the current key only', () => {
  const rotating = new SecretCipher(NEW, [OLD]);
  const stored = rotating.encrypt('tok-new-2', CONTEXT);
  assert.deepEqual(rotating.open(stored, CONTEXT), { plaintext: 'tok-new-2', current: true });
  assert.equal(new SecretCipher(NEW).decrypt(stored, CONTEXT), 'tok-new-2');
  assert.throws(() => new SecretCipher(OLD).decrypt(stored, CONTEXT), /authenticate/);
  assert.throws(() => new SecretCipher(OTHER, [OLD]).decrypt(stored, CONTEXT), /authenticate/);
});

test('a previous key still binds a value to its row and refuses a tampered or truncated one', () => {
  const stored = new SecretCipher(OLD).encrypt('tok-old-3', CONTEXT);
  const rotating = new SecretCipher(NEW, [OLD]);
  assert.throws(() => rotating.decrypt(stored, secretContext('acct_2', null, 'API_TOKEN')), /authenticate/);
  assert.throws(() => rotating.decrypt(stored, secretContext('acct_1', 'sbx_1', 'API_TOKEN')), /authenticate/);
  const tampered = Buffer.from(stored);
  tampered[tampered.length - 1]! ^= 1;
  assert.throws(() => rotating.decrypt(tampered, CONTEXT), /authenticate/);
  assert.throws(() => rotating.decrypt(stored.subarray(0, 20), CONTEXT), /unknown secret format/);
  assert.throws(() => rotating.decrypt(Buffer.concat([Buffer.from([9]), stored.subarray(1)]), CONTEXT), /unknown secret format/);
});

test('a previous key must be 32 bytes too, and the error does not show it', () => {
  const short = 'ab'.repeat(16);
  assert.throws(
    () => new SecretCipher(NEW, [short]),
    (err: Error) => /32 bytes/.test(err.message) && !err.message.includes(short),
  );
});

const BASE = {
  NODE_ENV: 'development',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/paddock',
  REDIS_URL: 'redis://127.0.0.1:6379',
};

test('PADDOCK_SECRETS_KEY_PREVIOUS is an optional comma-separated list of keys', () => {
  assert.equal(parseConfig(BASE).PADDOCK_SECRETS_KEY_PREVIOUS, undefined);
  assert.equal(parseConfig({ ...BASE, PADDOCK_SECRETS_KEY_PREVIOUS: '' }).PADDOCK_SECRETS_KEY_PREVIOUS, undefined);
  assert.deepEqual(parseConfig({ ...BASE, PADDOCK_SECRETS_KEY_PREVIOUS: OLD }).PADDOCK_SECRETS_KEY_PREVIOUS, [OLD]);
  const upper = OTHER.toUpperCase();
  assert.deepEqual(
    parseConfig({ ...BASE, PADDOCK_SECRETS_KEY_PREVIOUS: `${OLD}, ${upper},` }).PADDOCK_SECRETS_KEY_PREVIOUS,
    [OLD, upper],
  );
});

for (const [label, value] of [
  ['a key too short', 'ab'.repeat(31)],
  ['a key that is not hex', 'zz'.repeat(32)],
  ['one bad key among good ones', `${OLD},${'0'.repeat(63)}`],
] as const) {
  test(`PADDOCK_SECRETS_KEY_PREVIOUS with ${label} is refused naming the variable, not the value`, () => {
    assert.throws(
      () => parseConfig({ ...BASE, PADDOCK_SECRETS_KEY_PREVIOUS: value }),
      (err: Error) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.match(err.message, /^ {2}PADDOCK_SECRETS_KEY_PREVIOUS: expected comma-separated keys of 64 hex characters/m);
        for (const part of value.split(',')) assert.ok(!err.message.includes(part), 'the message shows a key');
        return true;
      },
    );
  });
}
