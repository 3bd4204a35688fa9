import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';

// A burst of requests, a stranger's included, must not make PostgreSQL fork backends while it lasts:
// each new connection cost it 36 to 45 ms of CPU in the abuse bench, on the cores every tenant's
// commands share (issue 13). The hot reads' pool is opened whole at start and kept whole.

const POOL = 4;

test('the hot reads run on connections opened at start: a burst of requests opens none', async () => {
  const name = `paddock-pool-${randomBytes(6).toString('hex')}`;
  const url = new URL(process.env.DATABASE_URL!);
  url.searchParams.set('application_name', name);
  const api = await startTestApi({ overrides: { DATABASE_URL: url.toString(), PADDOCK_DB_POOL_MAX: String(POOL) } });
  const observer = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await observer.connect();
  try {
    const backends = async () =>
      new Set((await observer.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [name])).rows.map((r) => r.pid));
    const account = await newAccount(api.url);
    // Every connection of the read pool, open without a request needing it. Only the read pool's
    // connections carry the URL's application_name: the ORM builds its own connection settings.
    const before = await eventually('the read pool opened its connections', 10_000, async () => {
      const pids = await backends();
      return pids.size === POOL ? pids : undefined;
    });

    const answers = await Promise.all(Array.from({ length: 10 * POOL }, () => call(api.url, 'GET', '/v1/account', { token: account.key })));
    assert.deepEqual(
      answers.map((a) => a.status),
      answers.map(() => 200),
    );
    const after = await backends();
    assert.deepEqual([...after].filter((pid) => !before.has(pid)), [], 'no backend was started for the burst');
    assert.equal(after.size, before.size);
  } finally {
    await observer.end();
  }
});
