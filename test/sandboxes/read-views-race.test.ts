import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { testConfig } from '../helpers/config.ts';
import { ReadViews } from '../../shared/cache/read-views.ts';

// The views' races, on the real Redis, where HTTP cannot time them: a commit landing while a
// reader reads PostgreSQL, an evicted generation, a view that is not JSON.
const config = testConfig();
const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1 });
after(() => redis.disconnect());
const prefix = config.PADDOCK_REDIS_PREFIX;

/** A loader that counts its reads of "the database" and answers `value()`, running `during` inside the read. */
function loader<T>(value: () => T, during?: () => Promise<void>) {
  const counted = { reads: 0, load: async () => {
    counted.reads++;
    const v = value();
    await during?.();
    return v;
  } };
  return counted;
}

test('a view is read once, then kept until a change replaces its generation', async () => {
  const views = new ReadViews(redis, prefix, 3600);
  let row = 'first';
  const db = loader(() => row);
  assert.equal(await views.view('acct_kept', 'account', db.load), 'first');
  assert.equal(await views.view('acct_kept', 'account', db.load), 'first');
  assert.equal(db.reads, 1);
  row = 'second';
  await views.changed(['acct_kept']);
  assert.equal(await views.view('acct_kept', 'account', db.load), 'second');
  assert.equal(db.reads, 2);
  // Another account's change leaves this one's view alone.
  await views.changed(['acct_other']);
  assert.equal(await views.view('acct_kept', 'account', db.load), 'second');
  assert.equal(db.reads, 2);
});

test('a read that a commit overtakes stores nothing: the next read goes to the database again', async () => {
  const views = new ReadViews(redis, prefix, 3600);
  let row = 'before';
  // The writer commits and replaces the generation while the reader holds the old row.
  const racing = loader(() => row, async () => {
    row = 'after';
    await views.changed(['acct_race']);
  });
  assert.equal(await views.view('acct_race', 'account', racing.load), 'before', 'the racing read answers what it read');
  const db = loader(() => row);
  assert.equal(await views.view('acct_race', 'account', db.load), 'after', 'never the stale row');
  assert.equal(db.reads, 1);
  // The same race for an account with no generation yet (its first read ever).
  let fresh = 'before';
  const first = loader(() => fresh, async () => {
    fresh = 'after';
    await views.changed(['acct_race_first']);
  });
  await views.view('acct_race_first', 'account', first.load);
  assert.equal(await views.view('acct_race_first', 'account', loader(() => fresh).load), 'after');
});

test('an evicted generation, a view that is not JSON, and 0 seconds each read the database', async () => {
  const views = new ReadViews(redis, prefix, 3600);
  let row = 'kept';
  const db = loader(() => row);
  await views.view('acct_evicted', 'account', db.load);
  row = 'changed by hand';
  await redis.del(`${prefix}:views:acct_evicted:gen`);
  assert.equal(await views.view('acct_evicted', 'account', db.load), 'changed by hand', 'a view without its generation is no hit');
  assert.equal(db.reads, 2);

  const generation = await redis.get(`${prefix}:views:acct_evicted:gen`);
  assert.ok(generation, 'the read that stored the view took a new generation');
  await redis.set(`${prefix}:views:acct_evicted:account`, `${generation}\n{not json`);
  assert.equal(await views.view('acct_evicted', 'account', db.load), 'changed by hand');
  assert.equal(db.reads, 3);

  const none = new ReadViews(redis, `${prefix}-none`, 0);
  const direct = loader(() => 'always');
  await none.view('acct_none', 'account', direct.load);
  await none.view('acct_none', 'account', direct.load);
  assert.equal(direct.reads, 2);
  assert.deepEqual(await redis.keys(`${prefix}-none:*`), [], 'nothing stored');
  // What `keep` refuses is not kept.
  const refused = loader(() => 'destroyed');
  await views.view('acct_keep', 'sandbox:sbx_y', refused.load, (v) => v !== 'destroyed');
  await views.view('acct_keep', 'sandbox:sbx_y', refused.load, (v) => v !== 'destroyed');
  assert.equal(refused.reads, 2);
  // Nothing found is not kept either.
  const missing = loader(() => undefined);
  await views.view('acct_missing', 'sandbox:sbx_x', missing.load);
  await views.view('acct_missing', 'sandbox:sbx_x', missing.load);
  assert.equal(missing.reads, 2);
});
