import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { secretContext, type SecretCipher } from '../../shared/secrets/cipher.ts';
import { OpenedSecrets, OpenedSecretsCache } from '../../shared/secrets/opened.ts';
import { findOwnSandboxWithPolicy } from '../../api/services/sandboxes.ts';

// An API process opens (decrypts) a sandbox's secrets once for a version of them and reuses them
// while they are unchanged: these tests count the decryptions each replica makes.
// Views last 2 s here: a change no writer announces (by hand, in SQL) reaches execs once they lapse.
const VIEW_SECONDS = 2;
const stack = await startSandboxStack({ apis: 2, overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5', PADDOCK_READ_CACHE_SECONDS: String(VIEW_SECONDS) } });
const [first, second] = stack.apis;

function countDecrypts(cipher: SecretCipher): () => number {
  let count = 0;
  const decrypt = cipher.decrypt.bind(cipher);
  cipher.decrypt = (stored, context) => {
    count++;
    return decrypt(stored, context);
  };
  return () => {
    const seen = count;
    count = 0;
    return seen;
  };
}
const decryptsOnFirst = countDecrypts(first!.deps.secretCipher!);
const decryptsOnSecond = countDecrypts(second!.deps.secretCipher!);

async function setup() {
  const a = await newAccount(stack.url);
  const s = (await createSandbox(stack.url, a.key)).body;
  const exec = (command: string, url = first!.url, sandboxId: string = s.id) =>
    call(url, 'POST', `/v1/sandboxes/${sandboxId}/exec`, { token: a.key, body: { command } });
  const secret = (body: unknown, url = stack.url) => call(url, 'POST', '/v1/secrets', { token: a.key, body });
  return { a, s, exec, secret };
}

test('an exec opens its secrets once for a version of them; a write through any replica reopens them on each', async () => {
  const { a, exec, secret } = await setup();
  for (const [name, value] of [['ONE', 'opened-one-1'], ['TWO', 'opened-two-1'], ['THREE', 'opened-three-1']]) {
    assert.equal((await secret({ name, value })).status, 201);
  }
  decryptsOnFirst();
  decryptsOnSecond();
  const check = 'test "$ONE" = opened-one-1 && test "$THREE" = opened-three-1 && echo "two=$TWO"';
  assert.equal((await exec(check)).body.stdout, 'two=***\n');
  assert.equal(decryptsOnFirst(), 3, 'the first exec decrypts every secret');
  assert.equal((await exec(check)).body.stdout, 'two=***\n');
  assert.equal((await exec(check)).body.stdout, 'two=***\n');
  assert.equal(decryptsOnFirst(), 0, 'unchanged: the next execs decrypt none');

  const stranger = await setup();
  assert.equal((await stranger.secret({ name: 'TWO', value: 'other-account' }, second!.url)).status, 201);
  assert.equal((await exec(check)).body.stdout, 'two=***\n');
  assert.equal(decryptsOnFirst(), 0, "another account's write changes nothing here");
  // Written through the second replica: the first sees it at its next exec.
  assert.equal((await secret({ name: 'TWO', value: 'opened-two-2' }, second!.url)).status, 200);
  assert.equal((await exec('test "$TWO" = opened-two-2 && echo changed')).body.stdout, 'changed\n');
  assert.equal(decryptsOnFirst(), 3, 'changed: opened again');
  assert.equal((await call(second!.url, 'DELETE', '/v1/secrets/ONE', { token: a.key })).status, 204);
  assert.equal((await exec('echo "one=[${ONE-unset}]"')).body.stdout, 'one=[unset]\n');
  // The second replica opens its own, once.
  assert.equal((await exec('echo "$TWO"', second!.url)).body.stdout, '***\n');
  assert.equal((await exec('echo "$TWO"', second!.url)).body.stdout, '***\n');
  assert.equal(decryptsOnSecond(), 2);
});

test('a secret changed in the database by a writer that does not announce it (a SQL console) reaches the execs once the views lapse', async () => {
  const { a, s, exec, secret } = await setup();
  assert.equal((await secret({ name: 'ROTATED', value: 'before-rotation', sandboxId: s.id })).status, 201);
  assert.equal((await exec('test "$ROTATED" = before-rotation && echo before')).body.stdout, 'before\n');
  const cipher = first!.deps.secretCipher!;
  const ciphertext = cipher.encrypt('after-rotation', secretContext(a.id, s.id, 'ROTATED'));
  /** An exec's output that `check` takes, within the views' lifetime and a second. */
  const within = (what: string, command: string, check: (stdout: string) => boolean) =>
    eventually(what, (VIEW_SECONDS + 1) * 1000, async () => (check((await exec(command)).body.stdout) ? true : undefined), 100);
  await first!.deps.pg.query('update secrets set ciphertext = $1 where account_id = $2 and name = $3', [ciphertext, a.id, 'ROTATED']);
  await within('the new value in an exec', 'test "$ROTATED" = after-rotation && echo after', (out) => out === 'after\n');
  await first!.deps.pg.query('delete from secrets where account_id = $1', [a.id]);
  await within('the secret gone from an exec', 'echo "[${ROTATED-unset}]"', (out) => out === '[unset]\n');

  // An account deleted with its secrets leaves no version behind (and the delete is not refused).
  const gone = await newAccount(stack.url);
  assert.equal((await call(stack.url, 'POST', '/v1/secrets', { token: gone.key, body: { name: 'GONE', value: 'goes-with-it' } })).status, 201);
  const versions = 'select count(*)::int as n from secret_versions where account_id = $1';
  assert.equal((await first!.deps.pg.query(versions, [gone.id])).rows[0].n, 1);
  await first!.deps.pg.query('delete from accounts where id = $1', [gone.id]);
  assert.equal((await first!.deps.pg.query(versions, [gone.id])).rows[0].n, 0);
});

test("an exec reads the sandbox with its policy from the account's view, its secrets from this process's cache: no PostgreSQL read while neither changes", async () => {
  const { exec, secret } = await setup();
  assert.equal((await secret({ name: 'VIEWED', value: 'viewed-value' })).status, 201);
  let reads = 0;
  const pg = first!.deps.pg;
  const query = pg.query.bind(pg) as (...args: unknown[]) => unknown;
  (pg as { query: unknown }).query = (...args: unknown[]) => {
    if ((args[0] as { name?: string })?.name === 'paddock-own-sandbox-with-policy') reads++;
    return query(...args);
  };
  try {
    assert.equal((await exec('echo "$VIEWED"')).body.stdout, '***\n');
    assert.equal(reads, 1, 'the first exec reads the database');
    // Kept once stored (after the first answer, without waiting on it).
    await eventually('the second exec served from the view', 5000, async () => {
      const before = reads;
      assert.equal((await exec('test "$VIEWED" = viewed-value && echo same')).body.stdout, 'same\n');
      return reads === before ? true : undefined;
    });
    assert.equal((await secret({ name: 'VIEWED', value: 'changed-value' })).status, 200);
    const before = reads;
    assert.equal((await exec('test "$VIEWED" = changed-value && echo yes')).body.stdout, 'yes\n');
    assert.equal(reads, before + 1, 'a change announced: read again');
  } finally {
    (pg as { query: unknown }).query = query;
  }
});

test('execs that read the same version at once open it once', async () => {
  const { a, s, secret } = await setup();
  for (const name of ['AT_ONCE_1', 'AT_ONCE_2', 'AT_ONCE_3']) assert.equal((await secret({ name, value: `value-of-${name}` })).status, 201);
  const deps = first!.deps;
  // Both reads are made before either opens what it read, as for execs sent together.
  const reads = await Promise.all([findOwnSandboxWithPolicy(deps, a.id, s.id), findOwnSandboxWithPolicy(deps, a.id, s.id)]);
  decryptsOnFirst();
  const [one, two] = reads.map((read) => read.openSecrets());
  assert.equal(decryptsOnFirst(), 3, 'the second took what the first opened');
  assert.equal(one, two);
  assert.equal(one!.env.AT_ONCE_2, 'value-of-AT_ONCE_2');
});

test("each sandbox's secrets are opened apart: neither another sandbox's nor another account's are reused", async () => {
  const { a, s, exec, secret } = await setup();
  const other = (await createSandbox(stack.url, a.key)).body;
  assert.equal((await secret({ name: 'SHARED', value: 'same-value-everywhere' })).status, 201);
  decryptsOnFirst();
  assert.equal((await exec('echo "$SHARED"')).body.stdout, '***\n');
  assert.equal(decryptsOnFirst(), 1);
  assert.equal((await exec('echo "$SHARED"', first!.url, other.id)).body.stdout, '***\n');
  assert.equal(decryptsOnFirst(), 1, 'another sandbox of the account: opened for it');
  const b = await setup();
  assert.equal((await b.secret({ name: 'SHARED', value: 'same-value-everywhere' })).status, 201);
  decryptsOnFirst();
  assert.equal((await b.exec('echo "$SHARED"')).body.stdout, '***\n');
  assert.equal(decryptsOnFirst(), 1, 'another account with the same secret: opened for it');
  // A foreign sandbox is 404 whatever this process holds of it.
  assert.equal((await b.exec('echo "$SHARED"', first!.url, s.id)).status, 404);
});

test('the cache of opened secrets is bounded by their bytes and drops what is unused', async () => {
  const opened = (value: string) => new OpenedSecrets('v', { NAME: value });
  const cache = new OpenedSecretsCache({ limitBytes: 100, idleMs: 60 });
  cache.put('acc_1', 'sbx_1', opened('x'.repeat(40)));
  cache.put('acc_1', 'sbx_2', opened('y'.repeat(40)));
  assert.ok(cache.get('acc_1', 'sbx_1'), 'used last now');
  cache.put('acc_2', 'sbx_3', opened('z'.repeat(40)));
  assert.deepEqual(cache.size, { entries: 2, bytes: 80 });
  assert.equal(cache.get('acc_1', 'sbx_2'), undefined, 'the least recently used went first');
  cache.put('acc_3', 'sbx_4', opened('w'.repeat(101)));
  assert.equal(cache.get('acc_3', 'sbx_4'), undefined, 'more than the whole bound: never held');
  assert.equal(cache.get('acc_2', 'sbx_1'), undefined, 'keyed by account and sandbox together');
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(cache.size, { entries: 0, bytes: 0 }, 'the sweep dropped what was idle');
  // A brokered secret is held as its value and as the header's whole value, with its hosts and header name: all of it counts.
  const value = 'b'.repeat(20);
  const brokered = new OpenedSecrets('v', {}, [{ credential: { hosts: ['api.example.com'], header: 'Authorization', value: `Bearer ${value}` }, value }]);
  assert.equal(brokered.bytes, 20 + 'api.example.com'.length + 'Authorization'.length + 'Bearer '.length + 20);
  cache.put('acc_4', 'sbx_5', brokered);
  assert.deepEqual(cache.size, { entries: 1, bytes: brokered.bytes });
  cache.clear();
});

