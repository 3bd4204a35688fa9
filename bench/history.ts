import pg from 'pg';
import { migrateDatabase } from '../migrations/migrate.ts';
import { RECENT_USAGE_ACCOUNTS, ROLLUP_OF_DESTROYED, secondsUsedSql } from '../shared/repositories/usage.ts';
import { SWEEP_READS } from '../shared/repositories/sandboxes.ts';
import { median, startStack, type Stack } from './stack.ts';
import { signUp } from './targets.ts';
import type { Benchmark, BenchContext, BenchRow } from './types.ts';

// Cost flat in history: the same operations on two fresh databases side by side, one
// empty and one holding an account with 100,000 destroyed sandboxes (spread over a year) and
// 10,000 active sandboxes across 1,000 accounts. Rounds alternate between the two stacks, so the
// machine's drift weighs on both alike. Rows only: the seeded sandboxes have no runtime sandbox.

const DESTROYED = 100_000;
const ACTIVE = 10_000;
const ACTIVE_ACCOUNTS = 1_000;
const ROUNDS = 5;
const REQUESTS = 40;
const CREATES = 10;
const GOAL = 1.2;

interface Side {
  name: 'empty' | 'history';
  url: string;
  databaseUrl: string;
  stack: Stack;
  key: string;
  accountId: string;
  /** A sandbox deep in the account's list: the cursor of a page far from the first. */
  deepCursor: string;
  anySandbox: string;
  latencies: Map<string, number[]>;
  sweep: { before: SweepFigures; after?: SweepFigures };
}

interface SweepFigures {
  sum: number;
  count: number;
}

export const historyBenchmark: Benchmark = {
  name: 'history',
  summary: `list, get, create, the quota check and the reaper sweep with ${DESTROYED.toLocaleString('en')} destroyed and ${ACTIVE.toLocaleString('en')} active sandboxes against an empty database; goal ≤ ${GOAL}x empty each`,
  async run(ctx) {
    const sides: Side[] = [];
    try {
      for (const name of ['empty', 'history'] as const) {
        const databaseUrl = await freshDatabase(ctx.databaseUrl, `paddock_bench_${name}`);
        const stack = await startStack({ ...ctx, databaseUrl }, `history-${name}`, { PADDOCK_REAPER_SWEEP_SECONDS: '1' });
        const { accountId, key } = await signUp(stack.url);
        ctx.log(`seeding the ${name} database`);
        const seeded = await seed(databaseUrl, accountId, name === 'history');
        sides.push({ name, url: stack.url, databaseUrl, stack, key, accountId, ...seeded, latencies: new Map(), sweep: { before: await sweepFigures(stack) } });
      }
      for (let round = 1; round <= ROUNDS; round++) {
        for (const side of round % 2 ? sides : [...sides].reverse()) {
          ctx.log(`round ${round}/${ROUNDS}: ${side.name}`);
          await measureRound(side);
        }
      }
      for (const side of sides) side.sweep.after = await sweepFigures(side.stack);
      const plans = await explain(sides[1]!);
      return rows(ctx, sides, plans);
    } finally {
      for (const side of sides) await side.stack.stop();
    }
  },
};

async function freshDatabase(baseUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  await migrateDatabase(url.href);
  return url.href;
}

/**
 * The empty side gets just enough for its pages to be full (a first page and one after a cursor);
 * the history side the whole history. Usage is rolled up as destroys roll it up.
 */
async function seed(databaseUrl: string, accountId: string, history: boolean): Promise<{ deepCursor: string; anySandbox: string }> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const destroyed = history ? DESTROYED : 250;
    await db.query(
      `insert into sandboxes (id, account_id, state, status, image, created_at, ready_at, expires_at, destroyed_at, destroy_reason)
       select 'sbx_' || lpad(to_hex(n), 24, '0'), $1, 'destroyed', 'terminated', 'bench',
              t, t + interval '1 second', t + interval '30 minutes', t + interval '10 minutes', 'user'
         from generate_series(1, $2::int) n, lateral (select now() - interval '2 days' - (n * interval '1 second') * (31536000 / $2::int) as t) x`,
      [accountId, destroyed],
    );
    if (history) {
      await db.query(
        `insert into accounts (id, email, password_hash)
         select 'acct_' || lpad(to_hex(n), 24, '0'), 'seed-' || n || '@example.com', 'x' from generate_series(1, $1::int) n`,
        [ACTIVE_ACCOUNTS],
      );
      await db.query(
        `insert into sandboxes (id, account_id, state, status, image, created_at, ready_at, expires_at)
         select 'sbx_a' || lpad(to_hex(n), 23, '0'), 'acct_' || lpad(to_hex(1 + n % $2::int), 24, '0'), 'active', 'running', 'bench',
                now() - interval '5 minutes', now() - interval '5 minutes', now() + interval '1 day'
           from generate_series(1, $1::int) n`,
        [ACTIVE, ACTIVE_ACCOUNTS],
      );
    }
    await db.query(
      `insert into usage_rollups (account_id, period_start, seconds)
       select account_id, period_start, sum(seconds) from (${ROLLUP_OF_DESTROYED}) r group by account_id, period_start`,
    );
    await db.query('analyze');
    const pick = async (offset: number) =>
      (await db.query<{ id: string }>('select id from sandboxes where account_id = $1 order by created_at desc, id desc offset $2 limit 1', [accountId, offset])).rows[0]!.id;
    return { deepCursor: await pick(Math.floor(destroyed / 2)), anySandbox: await pick(7) };
  } finally {
    await db.end();
  }
}

async function timed(side: Side, op: string, request: () => Promise<Response>): Promise<Response> {
  const started = performance.now();
  const res = await request();
  const ms = performance.now() - started;
  if (!res.ok) throw new Error(`${side.name} ${op} answered ${res.status}: ${await res.text()}`);
  const list = side.latencies.get(op) ?? [];
  list.push(ms);
  side.latencies.set(op, list);
  return res;
}

async function measureRound(side: Side): Promise<void> {
  const auth = { authorization: `Bearer ${side.key}` };
  const get = (path: string) => () => fetch(`${side.url}${path}`, { headers: auth });
  const ops: [string, () => Promise<Response>][] = [
    ['list: first page of 100', get('/v1/sandboxes?state=all&limit=100')],
    ['list: a page deep in the history', get(`/v1/sandboxes?state=all&limit=100&after=${side.deepCursor}`)],
    ['list: active only', get('/v1/sandboxes?state=active&limit=100')],
    ['get', get(`/v1/sandboxes/${side.anySandbox}`)],
    ['quota check: GET /v1/account', get('/v1/account')],
  ];
  for (const [op, request] of ops) {
    for (let i = 0; i < REQUESTS; i++) await (await timed(side, op, request)).arrayBuffer();
  }
  // Creates answer before the sandbox runs (?wait=false): the quota check and the insert, timed.
  const created: string[] = [];
  for (let i = 0; i < CREATES; i++) {
    const res = await timed(side, 'create (?wait=false)', () =>
      fetch(`${side.url}/v1/sandboxes?wait=false`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' }),
    );
    created.push(((await res.json()) as { id: string }).id);
  }
  for (const id of created) await (await fetch(`${side.url}/v1/sandboxes/${id}?wait=false`, { method: 'DELETE', headers: auth })).arrayBuffer();
}

async function sweepFigures(stack: Stack): Promise<SweepFigures> {
  const text = await (await fetch(`${stack.workerMetricsUrls[0]}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { sum: value('paddock_reaper_sweep_seconds_sum'), count: value('paddock_reaper_sweep_seconds_count') };
}

/** The plans of the statements these operations run, on the history side. */
async function explain(side: Side): Promise<Record<string, string>> {
  const db = new pg.Client({ connectionString: side.databaseUrl });
  await db.connect();
  const month = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)).toISOString();
  const statements: Record<string, [string, unknown[]]> = {
    'list: first page': [`select * from sandboxes where account_id = $1 order by created_at desc, id desc limit 101`, [side.accountId]],
    'list: after a cursor': [
      `select * from sandboxes where account_id = $1 and (created_at, id) < (select created_at, id from sandboxes where id = $2 and account_id = $1)
        order by created_at desc, id desc limit 101`,
      [side.accountId, side.deepCursor],
    ],
    'list: active only': [`select * from sandboxes where account_id = $1 and state = 'active' order by created_at desc, id desc limit 101`, [side.accountId]],
    get: [`select * from sandboxes where id = $1 and account_id = $2`, [side.anySandbox, side.accountId]],
    'quota check (usage)': [
      `select (select count(*) from sandboxes where account_id = $1 and state = 'active') as active, (${secondsUsedSql('$2', '$1')}) as seconds`,
      [side.accountId, month],
    ],
    'sweep: overdue': [SWEEP_READS.overdue.text, [side.stack.deployment, new Date(), 1000]],
    'sweep: accounts that used time lately': [RECENT_USAGE_ACCOUNTS, []],
  };
  const plans: Record<string, string> = {};
  try {
    for (const [name, [text, values]] of Object.entries(statements)) {
      const { rows } = await db.query<{ 'QUERY PLAN': string }>(`explain ${text}`, values);
      plans[name] = rows.map((r) => r['QUERY PLAN']).join('\n');
    }
  } finally {
    await db.end();
  }
  return plans;
}


function rows(ctx: BenchContext, sides: Side[], plans: Record<string, string>): BenchRow[] {
  const [empty, history] = sides as [Side, Side];
  const out: BenchRow[] = [];
  for (const op of empty.latencies.keys()) {
    const e = median(empty.latencies.get(op)!);
    const h = median(history.latencies.get(op)!);
    out.push(row(op, e, h));
  }
  const sweepMs = (s: Side) => ((s.sweep.after!.sum - s.sweep.before.sum) / Math.max(1, s.sweep.after!.count - s.sweep.before.count)) * 1000;
  out.push(row('reaper sweep (mean, from paddock_reaper_sweep_seconds)', sweepMs(empty), sweepMs(history)));
  const scans = Object.entries(plans).filter(([, plan]) => /Seq Scan on sandboxes/.test(plan));
  for (const [name, plan] of Object.entries(plans)) ctx.log(`\nEXPLAIN ${name} (history database):\n${plan}`);
  out.push({
    table: 'history',
    subject: 'plans on the history database with a sequential scan of sandboxes',
    figures: { statements: Object.keys(plans).length, 'seq scans': scans.length },
    goal: { text: 'none', met: scans.length === 0 },
    detail: plans,
  });
  return out;
}

function row(subject: string, emptyMs: number, historyMs: number): BenchRow {
  const ratio = historyMs / emptyMs;
  return {
    table: 'history',
    subject,
    figures: { 'empty p50 ms': Number(emptyMs.toFixed(2)), 'history p50 ms': Number(historyMs.toFixed(2)), ratio: Number(ratio.toFixed(2)) },
    goal: { text: `≤ ${GOAL}x empty`, met: ratio <= GOAL },
  };
}
