import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { metricValue, parseMetrics, type MetricSample } from '../../scripts/prometheus-text.ts';
import type { SandboxRuntime } from '../../shared/runtime/types.ts';

// What the fleet left behind, checked three ways: the database, the runtime's own view of its
// sandboxes (the processes and folders on this host) and the workers' metrics.

export interface Census {
  /** Sandboxes the database holds as active (state = 'active'), by status. */
  activeByStatus: Record<string, number>;
  activeInDb: number;
  /** The runtime's sandboxes, the warm pool's aside. */
  inRuntime: number;
  /** The warm pool's sandboxes (PADDOCK_WARM_POOL_SIZE): the deployment's, no account's. */
  pooled: number;
  /** In the runtime, not active in the database: would run, and cost, with nobody to stop them. */
  orphans: string[];
  /** Running in the database, absent from the runtime: a user would be billed for nothing. */
  missing: string[];
  /** paddock_active_sandboxes, summed over statuses, as a worker reports it. */
  activeGauge: number;
}

interface Row {
  id: string;
  state: string;
  status: string;
}

async function rows(db: pg.Pool, accountIds: string[]): Promise<Row[]> {
  const { rows } = await db.query<Row>('select id, state, status from sandboxes where account_id = any($1)', [accountIds]);
  return rows;
}

/** Waits until no sandbox of the accounts is between states (pending, terminating); false on timeout. */
export async function settle(db: pg.Pool, accountIds: string[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const unsettled = (await rows(db, accountIds)).filter((r) => r.status === 'pending' || r.status === 'terminating');
    if (unsettled.length === 0) return true;
    await sleep(250);
  }
  return false;
}

export async function scrape(url: string): Promise<MetricSample[]> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`${url}/metrics answered ${res.status}`);
  return parseMetrics(await res.text());
}

export async function census(db: pg.Pool, runtime: SandboxRuntime, accountIds: string[], workerMetricsUrl: string): Promise<Census> {
  const all = await rows(db, accountIds);
  const active = all.filter((r) => r.state === 'active');
  const activeIds = new Set(active.map((r) => r.id));
  const mine = new Set(all.map((r) => r.id));
  const pool = new Set((await db.query<{ id: string }>('select id from warm_sandboxes')).rows.map((r) => r.id));
  const everything = (await runtime.list()).map((s) => s.id);
  const held = everything.filter((id) => !pool.has(id));
  const heldIds = new Set(held);
  const activeByStatus: Record<string, number> = {};
  for (const r of active) activeByStatus[r.status] = (activeByStatus[r.status] ?? 0) + 1;
  return {
    activeByStatus,
    activeInDb: active.length,
    inRuntime: held.length,
    pooled: everything.length - held.length,
    // Anything in this stack's runtime that is not an active sandbox of the fleet: the data
    // directory is the stack's own, so even a sandbox the database never heard of counts.
    orphans: held.filter((id) => !activeIds.has(id) || !mine.has(id)),
    missing: active.filter((r) => r.status === 'running' && !heldIds.has(r.id)).map((r) => r.id),
    // No series at all when nothing is active.
    activeGauge: metricValue(await scrape(workerMetricsUrl), 'paddock_active_sandboxes') ?? 0,
  };
}

/** The webs' refusal counters, summed over the webs, keyed as the client tally keys its 429s. */
export async function serverRefusals(webUrls: string[]): Promise<{ refusals: Record<string, number>; server5xx: number }> {
  const refusals: Record<string, number> = {};
  let server5xx = 0;
  for (const url of webUrls) {
    for (const s of await scrape(url)) {
      if (s.name === 'paddock_rate_limit_refusals_total') refusals[`rate_limited: ${s.labels.bucket}`] = (refusals[`rate_limited: ${s.labels.bucket}`] ?? 0) + s.value;
      if (s.name === 'paddock_quota_refusals_total') refusals[s.labels.code!] = (refusals[s.labels.code!] ?? 0) + s.value;
      if (s.name === 'paddock_http_requests_total' && s.labels.status?.startsWith('5')) server5xx += s.value;
    }
  }
  return { refusals, server5xx };
}

/** Mean seconds per job type of a worker histogram (sum / count), over every worker. */
export async function jobMeans(workerMetricsUrls: string[], histogram: string): Promise<Record<string, { count: number; meanMs: number }>> {
  const totals: Record<string, { sum: number; count: number }> = {};
  for (const url of workerMetricsUrls) {
    for (const s of await scrape(url)) {
      const job = s.labels.job;
      if (!job) continue;
      const t = (totals[job] ??= { sum: 0, count: 0 });
      if (s.name === `${histogram}_sum`) t.sum += s.value;
      if (s.name === `${histogram}_count`) t.count += s.value;
    }
  }
  return Object.fromEntries(Object.entries(totals).map(([job, t]) => [job, { count: t.count, meanMs: t.count ? Math.round((t.sum / t.count) * 10000) / 10 : 0 }]));
}
