import { assertEventsMatchTransitions } from '../helpers/events.ts';
import assert from 'node:assert/strict';
import type pg from 'pg';
import type { JsonResponse } from '../helpers/http.ts';
import { assertProblem } from '../helpers/accounts.ts';
import type { Replicas, RoleProcess } from '../helpers/replicas.ts';

// What the fault tests measure and check, shared by them.

export type TimedResponse = JsonResponse & { ms: number };

/** A request that must be answered within `timeoutMs`: a hang fails the test, naming the route. */
export async function timedCall(
  baseUrl: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<TimedResponse> {
  const timeoutMs = options.timeoutMs ?? 3000;
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const started = performance.now();
  let res: Response;
  try {
    res = await fetch(new URL(path, baseUrl), {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const ms = Math.round(performance.now() - started);
    throw new Error(`${method} ${path} on ${baseUrl}: no answer (${(err as Error).name}: ${(err as Error).message}) after ${ms} ms`);
  }
  const text = await res.text();
  const ms = Math.round(performance.now() - started);
  const body: unknown = text && /json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(text) : text;
  return { status: res.status, headers: res.headers, body, ms };
}

/** 503 service_unavailable, a problem document with Retry-After in whole seconds. */
export function assertUnavailable(res: TimedResponse, what: string): void {
  try {
    assertProblem(res, 503, 'service_unavailable');
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}`);
  }
  assert.match(res.headers.get('retry-after') ?? '', /^[1-9]\d*$/, `${what}: Retry-After`);
}

export interface SandboxRow {
  id: string;
  account_id: string;
  state: string;
  status: string;
  destroy_reason: string | null;
  expires_at: Date;
  destroyed_at: Date | null;
}

export async function sandboxRows(db: pg.Pool, accountIds: string[]): Promise<SandboxRow[]> {
  const { rows } = await db.query<SandboxRow>(
    'select id, account_id, state, status, destroy_reason, expires_at, destroyed_at from sandboxes where account_id = any($1) order by created_at',
    [accountIds],
  );
  return rows;
}

/** How long a sandbox may stay pending or terminating before it counts as stuck. */
const SETTLE_WITHIN_MS = 15_000;

/**
 * The invariants every fault must leave intact, once things have settled: every row is running
 * or destroyed (none pending or terminating for ever), the runtime holds exactly the active rows,
 * one sandbox per id, and none of them is past its cap.
 */
export async function assertConsistent(replicas: Replicas, accountIds: string[], options: { inserted?: string[] } = {}): Promise<SandboxRow[]> {
  // A cap reached just before the check leaves its sandbox terminating for as long as its destroy
  // takes (on a loaded host, seconds): settled is that destroy done, not nothing under way.
  let rows = await sandboxRows(replicas.db, accountIds);
  const unsettledOf = (all: SandboxRow[]) => all.filter((r) => r.state === 'active' && r.status !== 'running');
  for (const until = Date.now() + SETTLE_WITHIN_MS; unsettledOf(rows).length > 0 && Date.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    rows = await sandboxRows(replicas.db, accountIds);
  }
  assert.deepEqual(unsettledOf(rows), [], 'every sandbox is running or destroyed');
  const held = await replicas.runtime.list();
  const ids = held.map((h) => h.id);
  assert.equal(new Set(ids).size, ids.length, `one runtime sandbox per id: ${ids.join(', ')}`);
  const { rows: owners } = await replicas.db.query<{ id: string; account_id: string }>('select id, account_id from sandboxes where id = any($1)', [ids]);
  // The harness's runtime is its own (its own data folder or stand-in): whatever it holds has a row.
  assert.deepEqual(ids.filter((id) => !owners.some((o) => o.id === id)), [], 'runtime sandboxes without a row: orphans');
  const mine = held.filter((h) => owners.some((o) => o.id === h.id && accountIds.includes(o.account_id)));
  const active = rows.filter((r) => r.state === 'active').map((r) => r.id);
  assert.deepEqual(mine.map((h) => h.id).sort(), [...active].sort(), 'the runtime holds exactly the active sandboxes: none orphaned');
  for (const h of mine) assert.equal(h.status, 'running', `runtime sandbox ${h.id}`);
  const now = Date.now();
  const overdue = rows.filter((r) => r.state === 'active' && r.expires_at.getTime() < now - 1000);
  assert.deepEqual(overdue, [], 'no sandbox is past its cap');
  // Every transition has its events, once each, in order, and no event lacks its transition.
  if (rows.length > 0) await assertEventsMatchTransitions(replicas.db, { sandboxIds: rows.map((r) => r.id), inserted: options.inserted });
  return rows;
}

/** Lines a process wrote that are not JSON log lines (raw stack traces a library printed, say). */
export function strayOutput(replicas: Replicas): string[] {
  return [...replicas.webs, ...replicas.workers].flatMap((p) =>
    p
      .output()
      .split('\n')
      .filter((line) => line.trim() && !line.startsWith('{'))
      .map((line) => `${p.role} ${p.index}: ${line}`),
  );
}

/** How many jobs of `name` the worker finished successfully, from its own /metrics. */
export async function jobsDone(worker: RoleProcess, name: string): Promise<number> {
  const res = await fetch(`${worker.url}/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith('paddock_job_duration_seconds_count{') && l.includes(`job="${name}"`) && l.includes('outcome="ok"'));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

/**
 * Every worker takes jobs: creates go through the queue (each pair destroyed before the next)
 * until each worker has finished at least one more than before (which worker takes a job is
 * BullMQ's choice, and a worker just back may take a while to reach Redis again), at most for
 * `withinMs`, whatever the runtime.
 */
export async function assertEachWorkerRuns(replicas: Replicas, apiKey: string, withinMs = 30_000): Promise<number[]> {
  const workers = replicas.workers.filter((w) => w.alive());
  const before = await Promise.all(workers.map((w) => jobsDone(w, 'create')));
  const deadline = Date.now() + withinMs;
  let made = 0;
  let after = before;
  while (after.some((n, i) => n <= before[i]!) && Date.now() < deadline) {
    const created = await Promise.all(
      workers.map(() => timedCall(replicas.url, 'POST', '/v1/sandboxes', { token: apiKey, body: {}, timeoutMs: 30_000 })),
    );
    for (const c of created) {
      assert.equal(c.status, 201, JSON.stringify(c.body));
      assert.equal(c.body.status, 'running', JSON.stringify(c.body));
      made++;
    }
    after = await Promise.all(workers.map((w) => jobsDone(w, 'create')));
    for (const c of created) {
      const destroyed = await timedCall(replicas.url, 'DELETE', `/v1/sandboxes/${c.body.id as string}`, { token: apiKey, timeoutMs: 30_000 });
      assert.equal(destroyed.body.state, 'destroyed', JSON.stringify(destroyed.body));
    }
  }
  workers.forEach((w, i) => assert.ok(after[i]! > before[i]!, `worker ${w.index} took no job in ${made} creates over ${withinMs} ms`));
  return after.map((n, i) => n - before[i]!);
}
