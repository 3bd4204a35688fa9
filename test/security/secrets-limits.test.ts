import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { newId } from '../../shared/ids.ts';

// One account storing secrets without end (4,897 secrets of 32 KiB in 15 s, then every
// exec failed): count and bytes are capped per account and per sandbox, exactly, also under
// concurrent requests, and replacing a secret at the cap still works.

const api = await startTestApi({
  overrides: {
    PADDOCK_SECRETS_MAX_PER_ACCOUNT: '5',
    PADDOCK_SECRETS_MAX_BYTES_PER_ACCOUNT: '8192',
    PADDOCK_SECRETS_MAX_PER_SANDBOX: '3',
    PADDOCK_SECRETS_MAX_BYTES_PER_SANDBOX: '2048',
  },
});

const put = (key: string, name: string, value: string, sandboxId?: string) =>
  call(api.url, 'POST', '/v1/secrets', { token: key, body: { name, value, ...(sandboxId ? { sandboxId } : {}) } });

/** An active sandbox of the account, as a row: the secrets routes need no runtime. */
async function sandboxOf(accountId: string): Promise<string> {
  const id = newId('sbx');
  await api.deps.pg.query(
    `insert into sandboxes (id, account_id, state, status, image, created_at, expires_at) values ($1, $2, 'active', 'running', 'host', now(), now() + interval '30 minutes')`,
    [id, accountId],
  );
  return id;
}

test('the count per account is a hard cap, exact under concurrent requests; a replacement at the cap is fine', async () => {
  const account = await newAccount(api.url, 'seccount');
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => put(account.key, `S_${i}`, `value-${i}-xxxx`)));
  assert.equal(answers.filter((a) => a.status === 201).length, 5);
  for (const refused of answers.filter((a) => a.status !== 201)) assertProblem(refused, 422, 'secret_limit_reached');
  const list = await call(api.url, 'GET', '/v1/secrets', { token: account.key });
  assert.equal(list.body.data.length, 5);
  const kept = list.body.data[0].name as string;
  assert.equal((await put(account.key, kept, 'a-new-value-here')).status, 200);
  assert.equal((await call(api.url, 'DELETE', `/v1/secrets/${kept}`, { token: account.key })).status, 204);
  assert.equal((await put(account.key, 'S_AFTER', 'fits-again')).status, 201);
});

test('the bytes per account are capped, and other accounts are unaffected', async () => {
  const [hog, neighbour] = await Promise.all([newAccount(api.url, 'secbytes'), newAccount(api.url, 'secneighbour')]);
  assert.equal((await put(hog.key, 'BIG_1', 'x'.repeat(5000))).status, 201);
  assertProblem(await put(hog.key, 'BIG_2', 'y'.repeat(5000)), 422, 'secret_limit_reached');
  assert.equal((await put(neighbour.key, 'BIG_1', 'z'.repeat(5000))).status, 201);
});

test('a value too short to be masked in output is refused, naming the rule; four bytes are enough', async () => {
  const account = await newAccount(api.url, 'secshort');
  for (const value of ['x', 'ab', 'abc']) {
    const refused = await put(account.key, 'SHORT', value);
    assertProblem(refused, 400, 'invalid_request');
    assert.match(refused.body.detail, /value.*at least 4 bytes/);
  }
  // Bytes, not characters: two two-byte characters pass.
  assert.equal((await put(account.key, 'SHORT', 'éé')).status, 201);
  assert.equal((await call(api.url, 'GET', '/v1/secrets', { token: account.key })).body.data.length, 1);
});

test('per sandbox, count and bytes are capped too, exactly under concurrent requests; another sandbox has its own', async () => {
  const account = await newAccount(api.url, 'secsandbox');
  const [one, two] = [await sandboxOf(account.id), await sandboxOf(account.id)];
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => put(account.key, `P_${i}`, `value-${i}-xxxx`, one)));
  assert.equal(answers.filter((a) => a.status === 201).length, 3);
  for (const refused of answers.filter((a) => a.status !== 201)) assertProblem(refused, 422, 'secret_limit_reached');
  // Bytes: 2048 for the sandbox's secrets together (each stored with a small overhead).
  assert.equal((await put(account.key, 'WIDE', 'w'.repeat(1500), two)).status, 201);
  const over = await put(account.key, 'WIDER', 'v'.repeat(1000), two);
  assertProblem(over, 422, 'secret_limit_reached');
  assert.match(over.body.detail, new RegExp(`Sandbox ${two}'s secrets`));
  // Replacing the big one with a value that fits is fine; the account's own secrets are unaffected.
  assert.equal((await put(account.key, 'WIDE', 'w'.repeat(1900), two)).status, 200);
  assert.equal((await put(account.key, 'ACCOUNT_WIDE', 'a'.repeat(1500))).status, 201);
  const listed = await call(api.url, 'GET', `/v1/secrets?sandboxId=${two}`, { token: account.key });
  assert.deepEqual(listed.body.data.map((s: { name: string }) => s.name), ['WIDE']);
});
