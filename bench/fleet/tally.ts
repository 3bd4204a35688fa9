import type { BenchRow } from '../types.ts';
import { percentile } from '../stack.ts';
import type { Sample } from './agent.ts';

// Turns the fleet's samples into the tables of the report: per route family and per route
// (requests/s, answers by class, latency of the requests that were served rather than refused),
// and the 429s by reason.

const FAMILIES: Record<string, string> = {
  'POST /v1/sandboxes': 'sandbox lifecycle',
  'DELETE /v1/sandboxes/{id}': 'sandbox lifecycle',
  'POST /v1/sandboxes/{id}/exec': 'exec',
};

export function familyOf(route: string): string {
  return FAMILIES[route] ?? (route.includes('/files') ? 'files' : 'other');
}

/** The latencies of the requests served: a fast 429, or no answer, does not flatter a percentile. */
export function servedMs(samples: Sample[]): number[] {
  return samples.filter((s) => s.status !== 429 && s.status !== 0).map((s) => s.ms);
}

function figures(samples: Sample[], seconds: number): Record<string, number> {
  const served = servedMs(samples);
  const count = (pred: (s: Sample) => boolean) => samples.filter(pred).length;
  return {
    requests: samples.length,
    'req/s': Math.round((samples.length / seconds) * 10) / 10,
    '2xx': count((s) => s.status >= 200 && s.status < 300),
    '429s': count((s) => s.status === 429),
    'other 4xx': count((s) => s.status >= 400 && s.status < 500 && s.status !== 429),
    '5xx': count((s) => s.status >= 500),
    'no answer': count((s) => s.status === 0),
    'p50 ms': percentile(served, 50),
    'p99 ms': percentile(served, 99),
    'max ms': percentile(served, 100),
  };
}

function groupBy(samples: Sample[], key: (s: Sample) => string): Map<string, Sample[]> {
  const groups = new Map<string, Sample[]>();
  for (const s of samples) {
    const k = key(s);
    const list = groups.get(k) ?? [];
    list.push(s);
    groups.set(k, list);
  }
  return groups;
}

/** Rows for the requests started within the window of `seconds`. */
export function trafficRows(samples: Sample[], seconds: number): BenchRow[] {
  const rows: BenchRow[] = [];
  const table = 'requests, per route family (latency: served requests, 429s left out)';
  for (const [family, list] of groupBy(samples, (s) => familyOf(s.route))) rows.push({ table, subject: family, figures: figures(list, seconds) });
  rows.sort((a, b) => a.subject.localeCompare(b.subject));
  const all = figures(samples, seconds);
  rows.push({ table, subject: 'all', figures: all, goal: { text: '5xx = 0', met: all['5xx'] === 0 } });

  const perRoute = 'requests, per route';
  const routes = [...groupBy(samples, (s) => s.route)].sort(([a], [b]) => a.localeCompare(b));
  for (const [route, list] of routes) rows.push({ table: perRoute, subject: route, figures: figures(list, seconds) });
  return rows;
}

/** 429s by reason: the problem code, and the bucket for rate-limit refusals. */
export function refusalRows(samples: Sample[], serverSide: Record<string, number>): BenchRow[] {
  const table = '429s by reason (client count; server count from the webs\' /metrics)';
  const reasons = groupBy(
    samples.filter((s) => s.status === 429),
    (s) => (s.code === 'rate_limited' ? `rate_limited: ${s.bucket ?? '?'}` : (s.code ?? '?')),
  );
  // Every reason the fleet can meet, so a zero is printed as a zero rather than left out.
  const known = ['rate_limited: sandbox_ops', 'rate_limited: sandbox_lifecycle', 'concurrent_sandbox_limit_reached', 'monthly_usage_limit_reached'];
  const names = new Set([...known, ...reasons.keys(), ...Object.keys(serverSide)]);
  return [...names].sort().map((reason) => ({
    table,
    subject: reason,
    figures: { client: reasons.get(reason)?.length ?? 0, server: serverSide[reason] ?? 0 },
  }));
}

/** Other error answers by route and code: anything here is worth reading. */
export function errorRows(samples: Sample[]): BenchRow[] {
  const table = 'answers other than 2xx and 429, by route and code';
  const errors = groupBy(
    samples.filter((s) => s.status === 0 || (s.status >= 300 && s.status !== 429)),
    (s) => `${s.route} → ${s.status === 0 ? `no answer (${s.error})` : `${s.status} ${s.code}`}`,
  );
  return [...errors].sort(([a], [b]) => a.localeCompare(b)).map(([what, list]) => ({ table, subject: what, figures: { count: list.length } }));
}
