import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call, type JsonResponse } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { waitForSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { jobCatalogue } from '../../shared/jobs/catalogue.ts';
import { sweepOnce } from '../../workers/reaper.ts';
import { metricValue, parseMetrics, type MetricSample } from '../../scripts/prometheus-text.ts';

// test-plan: once (the figures are read from PostgreSQL and Redis, whatever runtime made them)

// Insufficient Logging & Monitoring (API10 of the 2019 OWASP API Security Top 10): an operator
// sees, in Prometheus, the very figures the other suites check, and can trace each refusal in the
// logs by its request id. Driven here: a create (create and expire jobs), a concurrent-quota and a
// monthly-quota refusal, a rate-limit refusal and an expiry at a 3 s cap; then the API's /metrics
// and the worker's are read over HTTP:
//   API     paddock_rate_limit_refusals_total{bucket}, paddock_quota_refusals_total{code},
//           paddock_http_requests_total{method,route,status}
//   worker  paddock_queue_jobs{state}, paddock_job_latency_seconds{job},
//           paddock_job_duration_seconds{job,outcome}, paddock_active_sandboxes{status},
//           paddock_reaper_lag_seconds{source}, paddock_sandboxes_destroyed_total{reason}

// Long enough for the first tests to use the sandbox on a busy host before it expires.
const CAP_SECONDS = 8;
const logLines: string[] = [];
// No periodic sweep: the database is shared with other suites, whose overdue sandboxes a sweep
// would reap and count too. The sweep is run once, by hand, below.
const stack = await startSandboxStack({
  logLines,
  reaper: false,
  overrides: {
    PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '1',
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '2',
  },
});
const worker = stack.workers[0]!;

async function apiMetrics(): Promise<MetricSample[]> {
  const res = await call(stack.url, 'GET', '/metrics');
  assert.equal(res.status, 200);
  return parseMetrics(res.body as string);
}

async function workerMetrics(): Promise<MetricSample[]> {
  const res = await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  return parseMetrics(await res.text());
}

const refusals: JsonResponse[] = [];
let sandbox: { id: string };
const account = await newAccount(stack.url, 'monitored');

test('a create is measured: job latency and duration per job type, queue depth, active sandboxes', async () => {
  const created = await call(stack.url, 'POST', '/v1/sandboxes', { token: account.key, body: {} });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.status, 'running');
  sandbox = created.body;

  // The answer comes once the sandbox runs; the job that made it ends, is measured and leaves the
  // active list just after.
  const m = await eventually('the create job measured', 10_000, async () => {
    const scraped = await workerMetrics();
    const measured = (metricValue(scraped, 'paddock_job_duration_seconds_count', { job: 'create', outcome: 'ok' }) ?? 0) >= 1;
    return measured && metricValue(scraped, 'paddock_queue_jobs', { state: 'active' }) === 0 ? scraped : undefined;
  });
  assert.ok((metricValue(m, 'paddock_job_latency_seconds_count', { job: 'create' }) ?? 0) >= 1, 'create job latency');
  assert.ok((metricValue(m, 'paddock_job_duration_seconds_count', { job: 'create', outcome: 'ok' }) ?? 0) >= 1, 'create job duration');
  // This stack's queue holds one job now: the delayed expiry of the sandbox.
  assert.equal(metricValue(m, 'paddock_queue_jobs', { state: 'delayed' }), 1);
  for (const state of ['waiting', 'active', 'failed']) assert.equal(metricValue(m, 'paddock_queue_jobs', { state }), 0, state);
  assert.ok((metricValue(m, 'paddock_active_sandboxes', { status: 'running' }) ?? 0) >= 1, 'active sandboxes');
});

test('the active-sandbox gauge is what the database says', async () => {
  // The database is shared with other suites: compare with counts taken around the scrape.
  const count = async () => {
    const [row] = await worker.deps.orm.em.fork().execute<{ n: string }[]>("select count(*) as n from sandboxes where state = 'active' and status = 'running'");
    return Number(row!.n);
  };
  for (let attempt = 0; ; attempt++) {
    const before = await count();
    const gauge = metricValue(await workerMetrics(), 'paddock_active_sandboxes', { status: 'running' });
    const after = await count();
    if (before === after) {
      assert.equal(gauge, before);
      break;
    }
    assert.ok(attempt < 20, 'the database kept changing');
  }
});

test('refusals are counted per bucket and per quota code, and each is in the log with its request id', async () => {
  const again = await call(stack.url, 'POST', '/v1/sandboxes', { token: account.key, body: {} });
  assertProblem(again, 429, 'concurrent_sandbox_limit_reached');
  refusals.push(again);

  const broke = await newAccount(stack.url, 'broke');
  await worker.deps.orm.em.fork().execute('update accounts set monthly_sandbox_hours_limit = 0 where id = ?', [broke.id]);
  const monthly = await call(stack.url, 'POST', '/v1/sandboxes', { token: broke.key, body: {} });
  assertProblem(monthly, 429, 'monthly_usage_limit_reached');
  refusals.push(monthly);

  const exec = () => call(stack.url, 'POST', `/v1/sandboxes/${sandbox.id}/exec`, { token: account.key, body: { command: ['true'] } });
  assert.equal((await exec()).status, 200);
  assert.equal((await exec()).status, 200);
  const limited = await exec();
  assertProblem(limited, 429, 'rate_limited');
  refusals.push(limited);

  const m = await apiMetrics();
  assert.equal(metricValue(m, 'paddock_rate_limit_refusals_total', { bucket: 'sandbox_ops' }), 1);
  assert.equal(metricValue(m, 'paddock_rate_limit_refusals_total', { bucket: 'sandbox_lifecycle' }) ?? 0, 0);
  assert.equal(metricValue(m, 'paddock_quota_refusals_total', { code: 'concurrent_sandbox_limit_reached' }), 1);
  assert.equal(metricValue(m, 'paddock_quota_refusals_total', { code: 'monthly_usage_limit_reached' }), 1);
  assert.equal(metricValue(m, 'paddock_http_requests_total', { method: 'POST', route: '/v1/sandboxes', status: '429' }), 2);
  assert.equal(metricValue(m, 'paddock_http_requests_total', { method: 'POST', route: '/v1/sandboxes/:id/exec', status: '429' }), 1);

  for (const res of refusals) {
    const id = res.headers.get('x-request-id')!;
    const line = logLines.find((l) => l.includes(id) && /"status":429/.test(l));
    assert.ok(line, `no log line for ${id}`);
    assert.ok(!line.includes(account.key) && !line.includes(broke.key), 'the log line holds a key');
  }
});

/** Creates a sandbox of `account` and lets it expire; by its delayed job, or (its job removed) by a sweep. */
async function expire(by: 'expire-job' | 'sweep') {
  const created = await call(stack.url, 'POST', '/v1/sandboxes', { token: account.key, body: {} });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const before = await workerMetrics();
  if (by === 'sweep') {
    assert.equal(await worker.deps.queue.remove(jobCatalogue.expire.jobId({ sandboxId: created.body.id })), 1);
    await sleep(Math.max(0, Date.parse(created.body.expiresAt) - Date.now() + 100));
    // Another process may hold the sweep's lock for a moment.
    for (let i = 0; i < 50 && !(await sweepOnce(worker.deps)); i++) await sleep(200);
  }
  const gone = await waitForSandbox(stack.url, account.key, created.body.id, (s) => s.state === 'destroyed', 30_000);
  assert.equal(gone.destroyReason, 'expired');
  let after = await workerMetrics();
  const delta = (name: string, labels: Record<string, string> = {}) => (metricValue(after, name, labels) ?? 0) - (metricValue(before, name, labels) ?? 0);
  // The job's own figures are recorded once BullMQ has marked it completed, a moment after the
  // commit that destroyed the row (seen: not yet, on a busy machine).
  const done = () => delta('paddock_job_duration_seconds_count', { job: 'expire', outcome: 'ok' }) >= 1;
  for (let i = 0; by === 'expire-job' && !done() && i < 100; i++) {
    await sleep(100);
    after = await workerMetrics();
  }
  return { gone, lagSeconds: (Date.parse(gone.destroyedAt) - Date.parse(gone.expiresAt)) / 1000, delta, after };
}

test('an expiry by its delayed job is measured: reaper lag as the timestamps say, the expire job, the queue drained', async () => {
  await waitForSandbox(stack.url, account.key, sandbox.id, (s) => s.state === 'destroyed', 30_000);
  // Another suite's sweep (same database) may, rarely, destroy the sandbox first: then try again.
  for (let attempt = 1; ; attempt++) {
    const { lagSeconds, delta, after } = await expire('expire-job');
    const observed = delta('paddock_reaper_lag_seconds_count', { source: 'expire-job' });
    if (observed === 0 && attempt < 3) continue;
    assert.equal(observed, 1, 'one expiry observed');
    const lag = delta('paddock_reaper_lag_seconds_sum', { source: 'expire-job' });
    assert.ok(lag >= 0, `lag ${lag}`);
    // The operator's figure and the sandbox's own timestamps agree (the row is written just after).
    assert.ok(Math.abs(lag - lagSeconds) < 1, `metric ${lag.toFixed(3)} s, timestamps ${lagSeconds.toFixed(3)} s`);
    assert.ok(after.some((s) => s.name === 'paddock_reaper_lag_seconds_bucket' && s.labels.le === '+Inf'));
    assert.equal(delta('paddock_sandboxes_destroyed_total', { reason: 'expired' }), 1);
    assert.equal(delta('paddock_job_latency_seconds_count', { job: 'expire' }), 1, 'expire job latency');
    assert.equal(delta('paddock_job_duration_seconds_count', { job: 'expire', outcome: 'ok' }), 1, 'expire job duration');
    // A delayed job's latency counts from when it was due, not from when it was queued.
    const latency = delta('paddock_job_latency_seconds_sum', { job: 'expire' });
    assert.ok(latency < CAP_SECONDS, `expire latency ${latency} s`);
    assert.equal(metricValue(after, 'paddock_queue_jobs', { state: 'delayed' }), 0);
    break;
  }
});

test('an expiry by the sweep is measured with its own source', async () => {
  for (let attempt = 1; ; attempt++) {
    const { lagSeconds, delta } = await expire('sweep');
    const observed = delta('paddock_reaper_lag_seconds_count', { source: 'sweep' });
    if (observed === 0 && attempt < 3) continue;
    // (The sweep also reaps other suites' overdue sandboxes in the shared database.)
    assert.ok(observed >= 1, 'the sweep observed the expiry');
    assert.ok(lagSeconds >= 0);
    assert.ok(delta('paddock_sandboxes_destroyed_total', { reason: 'expired' }) >= 1);
    break;
  }
});

test('both processes expose their metrics with the documented types', async () => {
  const api = (await call(stack.url, 'GET', '/metrics')).body as string;
  const work = await (await fetch(`http://127.0.0.1:${worker.metricsPort}/metrics`)).text();
  for (const [text, name, type] of [
    [api, 'paddock_rate_limit_refusals_total', 'counter'],
    [api, 'paddock_quota_refusals_total', 'counter'],
    [api, 'paddock_http_requests_total', 'counter'],
    [work, 'paddock_queue_jobs', 'gauge'],
    [work, 'paddock_active_sandboxes', 'gauge'],
    [work, 'paddock_job_latency_seconds', 'histogram'],
    [work, 'paddock_job_duration_seconds', 'histogram'],
    [work, 'paddock_reaper_lag_seconds', 'histogram'],
    [work, 'paddock_sandboxes_destroyed_total', 'counter'],
  ] as const) {
    assert.match(text, new RegExp(`^# TYPE ${name} ${type}$`, 'm'), name);
  }
  // Labels carry patterns and codes, never ids or keys.
  assert.doesNotMatch(api + work, /acct_[0-9a-z]{24}|sbx_[0-9a-z]{24}|key_[0-9a-z]{24}|pdk_live_/);
});
