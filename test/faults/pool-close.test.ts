import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { closeOrm, openOrm, openWhole, ormPool } from '../../shared/db/orm.ts';
import { eventually } from '../helpers/eventually.ts';
import { createLogger } from '../../shared/logger.ts';
import { testConfig } from '../helpers/config.ts';

// A pool ends only once its connections are given back: one held forever must not keep a stopping
// process from exiting (shared/db/orm.ts, endPoolWithin).

function memoryLog() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('info', 'pool-close-test', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { log, lines };
}

test('closing the ORM with a connection never given back ends within the bound and says what it held', async () => {
  const orm = await openOrm(testConfig().DATABASE_URL, 2);
  const held = await (await ormPool(orm.em)).connect();
  assert.equal((await held.query<{ one: number }>('select 1 as one')).rows[0]?.one, 1);
  const { log, lines } = memoryLog();
  const started = performance.now();
  await closeOrm(orm, log, 300);
  const ms = performance.now() - started;
  assert.ok(ms >= 290 && ms < 5000, `${ms} ms`);
  const warning = lines.find((l) => String(l.msg).startsWith('database pool not closed in time'));
  assert.ok(warning, JSON.stringify(lines));
  assert.equal(warning.pool, 'orm');
  assert.ok(Number(warning.total) >= 1, JSON.stringify(warning));
  // Ended under its holder: nothing of the pool keeps the process alive.
  await assert.rejects(held.query('select 1'));
});

test('a closed ORM opens no connection again: work still in flight at its close fails instead of opening a pool nothing ends', async () => {
  const name = `pool-close-${randomBytes(4).toString('hex')}`;
  const url = new URL(testConfig().DATABASE_URL);
  url.searchParams.set('application_name', name);
  const orm = await openOrm(url.toString(), 2);
  await orm.em.fork().getConnection().execute('select 1');
  await closeOrm(orm, memoryLog().log, 3000);
  await assert.rejects(orm.em.fork().transactional(async (em) => em.getConnection().execute('select 1')), /closed/);
  await assert.rejects(orm.em.fork().getConnection().execute('select 1'), /closed/);
  await assert.rejects(ormPool(orm.em), /closed/);
  const observer = new pg.Client({ connectionString: testConfig().DATABASE_URL });
  await observer.connect();
  try {
    const { rows } = await observer.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where application_name = $1', [name]);
    assert.equal(rows[0]?.n, 0);
  } finally {
    await observer.end();
  }
});

test('closing the ORM whose connections are all given back ends at once, without a warning', async () => {
  const orm = await openOrm(testConfig().DATABASE_URL, 2);
  const client = await (await ormPool(orm.em)).connect();
  await client.query('select 1');
  client.release();
  const { log, lines } = memoryLog();
  const started = performance.now();
  await closeOrm(orm, log, 3000);
  assert.ok(performance.now() - started < 2000, `${performance.now() - started} ms`);
  assert.deepEqual(lines, []);
});

test('a transaction whose BEGIN fails gives its connection back: a pool of one serves the next query', async () => {
  const orm = await openOrm(testConfig().DATABASE_URL, 1);
  try {
    const pool = await ormPool(orm.em);
    // The pool's one connection, left inside an aborted transaction behind the ORM's back: the
    // next BEGIN on it fails, as it does on a connection PostgreSQL has cut.
    const dirty = await pool.connect();
    await dirty.query('begin');
    await dirty.query('select 1/0').catch(() => undefined);
    dirty.release();
    await assert.rejects(orm.em.fork().transactional(async (em) => em.getConnection().execute('select 1')), /current transaction is aborted/);
    const started = performance.now();
    const rows = await orm.em.fork().getConnection().execute<{ one: number }[]>('select 1 as one');
    assert.equal(rows[0]?.one, 1);
    assert.ok(performance.now() - started < 2000, `the next query waited ${performance.now() - started} ms for a connection`);
    assert.ok(pool.totalCount <= 1, `${pool.totalCount} connections`);
  } finally {
    // Bounded: without the fix the pool never ends (the first test).
    await closeOrm(orm, memoryLog().log, 1000);
  }
});

test('a pool opened whole and ended while one of its connects still waits for a place ends once the rest are given back', async () => {
  const pool = new pg.Pool({ connectionString: testConfig().DATABASE_URL, max: 2 });
  const held = await pool.connect();
  // One connect opens the pool's second connection; the other waits for a place, which an ended
  // pool never gives it.
  openWhole(pool, 2);
  await eventually('the second connection open and given back', 10_000, async () => (pool.totalCount === 2 && pool.idleCount === 1 ? true : undefined));
  const ended = pool.end();
  held.release();
  const outcome = await Promise.race([ended.then(() => 'ended'), new Promise((resolve) => setTimeout(() => resolve('still open after 3 s'), 3000))]);
  assert.equal(outcome, 'ended');
  assert.equal(pool.totalCount, 0);
});
