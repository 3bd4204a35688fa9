import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Config } from '../../shared/config.ts';
import { migrateDatabase } from '../../migrations/migrate.ts';
import { ensureDatabase } from '../../scripts/services.ts';
import { SecretCipher, secretContext } from '../../shared/secrets/cipher.ts';
import { startApi } from '../../api/server.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { envOf } from '../helpers/processes.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

// Rotating PADDOCK_SECRETS_KEY end to end: secrets stored under key A, an API on key B with A as
// previous, `npm run secrets:reencrypt`, then an API on key B alone. The re-encryption walks the
// whole secrets table, so this file has a database of its own: the other files' secrets, under
// their own keys, would be unreadable to it.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const key = () => randomBytes(32).toString('hex');
const [KEY_A, KEY_B, KEY_X] = [key(), key(), key()];

const { url: databaseUrl, drop } = await databaseOfOurOwn();
const stack = await startSandboxStack({ overrides: { DATABASE_URL: databaseUrl, PADDOCK_SECRETS_KEY: KEY_A } }).catch(
  async (err: unknown) => {
    await drop();
    throw err;
  },
);
after(drop); // after the stack's own teardown, which runs first
const withKeys = (current: string, previous?: string[]): Config => ({
  ...stack.config,
  PADDOCK_SECRETS_KEY: current,
  PADDOCK_SECRETS_KEY_PREVIOUS: previous,
});

const VALUES = { ACCOUNT_TOKEN: 'acct-9c1e27f4aa', SANDBOX_TOKEN: 'sbx-51d0b3e8cc', LATER_TOKEN: 'later-7e2a9f01dd' };
const account = await newAccount(stack.url, 'rotation');
const sandbox = (await createSandbox(stack.url, account.key)).body;
assert.ok(sandbox.id, JSON.stringify(sandbox));

const putSecret = (url: string, body: { name: string; value: string; sandboxId?: string }) =>
  call(url, 'POST', '/v1/secrets', { token: account.key, body });
/** Runs, through the API at `url`, an exec that prints each name whose variable holds its value. */
const exec = (url: string, names: (keyof typeof VALUES)[]) =>
  call(url, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, {
    token: account.key,
    body: { command: names.map((n) => `test "$${n}" = ${VALUES[n]} && echo ${n}`).join('; ') },
  });

test('a secret stored under the old key is read during the rotation, re-encrypted, then read with the new key alone', async () => {
  assert.equal((await putSecret(stack.url, { name: 'ACCOUNT_TOKEN', value: VALUES.ACCOUNT_TOKEN })).status, 201);
  const scoped = await putSecret(stack.url, { name: 'SANDBOX_TOKEN', value: VALUES.SANDBOX_TOKEN, sandboxId: sandbox.id });
  assert.equal(scoped.status, 201);
  assert.equal((await exec(stack.url, ['ACCOUNT_TOKEN', 'SANDBOX_TOKEN'])).body.stdout, 'ACCOUNT_TOKEN\nSANDBOX_TOKEN\n');

  // Key B alone cannot read them yet: this is what the previous key and the re-encryption are for.
  await withApi(withKeys(KEY_B), async (url) => {
    const res = await exec(url, ['ACCOUNT_TOKEN', 'SANDBOX_TOKEN']);
    assertProblem(res, 503, 'service_unavailable');
    assert.match(res.body.detail, /Secret ACCOUNT_TOKEN cannot be read with this server's keys/);
    assert.match(res.headers.get('retry-after') ?? '', /^\d+$/);
  });

  // The rolled API: B current, A previous. Old secrets are read; a new one is written with B.
  await withApi(withKeys(KEY_B, [KEY_A]), async (url) => {
    assert.equal((await exec(url, ['ACCOUNT_TOKEN', 'SANDBOX_TOKEN'])).body.stdout, 'ACCOUNT_TOKEN\nSANDBOX_TOKEN\n');
    assert.equal((await putSecret(url, { name: 'LATER_TOKEN', value: VALUES.LATER_TOKEN })).status, 201);
  });

  // Batches of 2 over 3 rows: the walk goes past its first batch.
  const first = await reencrypt(withKeys(KEY_B, [KEY_A]), ['--batch-size', '2']);
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(JSON.parse(first.stdout), { reencrypted: 2, alreadyCurrent: 1, unreadable: 0, deleted: 0 });
  const stored = await secretRows();
  assert.deepEqual(stored.map((r) => [r.name, new SecretCipher(KEY_B).decrypt(r.ciphertext, contextOf(r))]), [
    ['ACCOUNT_TOKEN', VALUES.ACCOUNT_TOKEN],
    ['SANDBOX_TOKEN', VALUES.SANDBOX_TOKEN],
    ['LATER_TOKEN', VALUES.LATER_TOKEN],
  ]);

  // Idempotent: a second run finds everything under the current key.
  const again = await reencrypt(withKeys(KEY_B, [KEY_A]));
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(JSON.parse(again.stdout), { reencrypted: 0, alreadyCurrent: 3, unreadable: 0, deleted: 0 });
  assert.deepEqual(
    (await secretRows()).map((r) => r.ciphertext.toString('hex')),
    stored.map((r) => r.ciphertext.toString('hex')),
    'a run with nothing to do rewrote a row',
  );

  // The previous key is dropped: B alone reads every secret, and A reads none any more.
  await withApi(withKeys(KEY_B), async (url) => {
    const res = await exec(url, ['ACCOUNT_TOKEN', 'SANDBOX_TOKEN', 'LATER_TOKEN']);
    assert.equal(res.body.stdout, 'ACCOUNT_TOKEN\nSANDBOX_TOKEN\nLATER_TOKEN\n', JSON.stringify(res.body));
  });
  await withApi(withKeys(KEY_A), async (url) => {
    assertProblem(await exec(url, ['ACCOUNT_TOKEN']), 503, 'service_unavailable');
  });
});

test('a row no configured key reads: exit 1 with its id on stderr, never a value or a key; the others are still done', async () => {
  // One secret under a key the script is not given, one more under the previous key.
  await withApi(withKeys(KEY_X), async (url) => {
    assert.equal((await putSecret(url, { name: 'STRAY_TOKEN', value: 'stray-0d4c7b22ee' })).status, 201);
  });
  await withApi(withKeys(KEY_A), async (url) => {
    assert.equal((await putSecret(url, { name: 'OLD_TOKEN', value: 'old-3b8e1f64aa' })).status, 201);
  });
  const rows = await secretRows();
  const stray = rows.find((r) => r.name === 'STRAY_TOKEN')!;

  const run = await reencrypt(withKeys(KEY_B, [KEY_A]));
  assert.equal(run.code, 1, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), { reencrypted: 1, alreadyCurrent: 3, unreadable: 1, deleted: 0 });
  assert.match(run.stderr, new RegExp(`secrets\\.id: ${stray.id}\\n`));
  for (const hidden of ['stray-0d4c7b22ee', 'old-3b8e1f64aa', ...Object.values(VALUES), KEY_A, KEY_B, KEY_X]) {
    assert.ok(!`${run.stdout}${run.stderr}`.includes(hidden), 'the output shows a value or a key');
  }
  // The stray row is left as it was; the old one moved to key B.
  const now = await secretRows();
  assert.deepEqual(now.find((r) => r.name === 'STRAY_TOKEN')!.ciphertext, stray.ciphertext);
  const moved = now.find((r) => r.name === 'OLD_TOKEN')!;
  assert.equal(new SecretCipher(KEY_B).decrypt(moved.ciphertext, contextOf(moved)), 'old-3b8e1f64aa');
});

test('the script refuses a bad PADDOCK_SECRETS_KEY_PREVIOUS or a missing PADDOCK_SECRETS_KEY, naming the variable', async () => {
  const bad = await reencrypt({ ...withKeys(KEY_B), PADDOCK_SECRETS_KEY_PREVIOUS: [KEY_A.slice(2)] });
  assert.equal(bad.code, 78, bad.stderr);
  assert.match(bad.stderr, /PADDOCK_SECRETS_KEY_PREVIOUS: expected/);
  assert.ok(!bad.stderr.includes(KEY_A.slice(2)), 'the message shows the key');
  assert.equal(bad.stdout, '');
  const missing = await reencrypt({ ...withKeys(KEY_B), PADDOCK_SECRETS_KEY: undefined });
  assert.equal(missing.code, 78, missing.stderr);
  assert.match(missing.stderr, /PADDOCK_SECRETS_KEY: is required/);
});

/** An API on `config` (this stack's database, Redis prefix and runtime) for the length of `use`. */
async function withApi(config: Config, use: (url: string) => Promise<void>): Promise<void> {
  const api = await startApi(config, { kubeConfig: stack.kubeConfig });
  try {
    await use(api.url);
  } finally {
    await api.close();
  }
}

/** `npm run secrets:reencrypt` as a process of its own, with `config` as its environment. */
function reencrypt(config: Config, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const options = { cwd: ROOT, env: envOf(config), timeout: 60_000 };
    execFile(process.execPath, ['scripts/reencrypt-secrets.ts', ...args], options, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

interface StoredSecret {
  id: string;
  account_id: string;
  sandbox_id: string | null;
  name: string;
  ciphertext: Buffer;
}

async function secretRows(): Promise<StoredSecret[]> {
  return withClient(databaseUrl, async (c) => (await c.query<StoredSecret>('select * from secrets order by id')).rows);
}

const contextOf = (row: StoredSecret) => secretContext(row.account_id, row.sandbox_id, row.name);

/** A fresh, migrated database on the test server, and how to drop it. */
async function databaseOfOurOwn(): Promise<{ url: string; drop: () => Promise<unknown> }> {
  const server = process.env.DATABASE_URL;
  if (!server) throw new Error('DATABASE_URL must be set: run the tests with `npm test`');
  const name = `paddock_rotation_${randomBytes(6).toString('hex')}`;
  const url = await ensureDatabase(server, name, false);
  const drop = () => withClient(server, (c) => c.query(`drop database if exists ${name} with (force)`));
  try {
    await migrateDatabase(url);
  } catch (err) {
    await drop();
    throw err;
  }
  return { url, drop };
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
