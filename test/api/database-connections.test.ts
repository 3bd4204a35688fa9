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
// commands share, and under a saturated host a connection opened on demand took more
// than its 3 s to open and the request answered 503 (`npm run bench:load`). Both of an API
// process's pools, the hot reads' and the ORM's, are opened whole at start and kept whole.

const POOL = 4;

test("the hot reads and the ORM's statements run on connections opened at start: a burst of requests opens none", async () => {
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
    // Every connection of both pools, open without a request needing them (both carry the URL's
    // application_name).
    const before = await eventually('both pools opened their connections', 10_000, async () => {
      const pids = await backends();
      return pids.size === 2 * POOL ? pids : undefined;
    });

    // Reads on the read pool, and the listing of API keys (with the dashboard's session) on the ORM's.
    const answers = await Promise.all(
      Array.from({ length: 10 * POOL }, (_, i) =>
        i % 2 ? call(api.url, 'GET', '/v1/account', { token: account.key }) : call(api.url, 'GET', '/v1/api-keys', { token: account.token }),
      ),
    );
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
