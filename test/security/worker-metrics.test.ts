import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../shared/logger.ts';
import { startWorkers } from '../../workers/workers.ts';
import { testConfig } from '../helpers/config.ts';
import { offlineTransport } from '../helpers/webhooks.ts';
import { eventually } from '../helpers/eventually.ts';

// The worker's /metrics and /healthz: a bare worker listens on loopback only (every interface
// exposed its metrics, whatever network the host is on), and with PADDOCK_METRICS_TOKEN set its
// /metrics wants the token, as the API's does. Another loopback address (127.0.0.2) stands for
// "an interface that is not the one configured": reachable only by a listener on every interface.

const TOKEN = 'worker-metrics-token-0123456789';
const dir = mkdtempSync(join(tmpdir(), 'paddock-worker-metrics-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function startWorker(overrides: Record<string, string> = {}) {
  const config = testConfig({ PADDOCK_RUNTIME: 'local', PADDOCK_DATA_DIR: join(dir, 'data'), PADDOCK_METRICS_TOKEN: TOKEN, ...overrides });
  const worker = await startWorkers(config, createLogger('silent', 'worker'), { reaper: false, webhookTransport: offlineTransport });
  after(() => worker.close());
  return worker;
}

/** The status of a GET, or the connection's error code when nothing listens there. */
async function statusAt(host: string, port: number, path: string, token?: string): Promise<number | string> {
  try {
    const res = await fetch(`http://${host}:${port}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    await res.arrayBuffer();
    return res.status;
  } catch (err) {
    return (err as { cause?: { code?: string } }).cause?.code ?? String(err);
  }
}

test("a worker's metrics listener binds loopback by default, and its /metrics wants the metrics token", async () => {
  const worker = await startWorker();
  const port = worker.metricsPort;
  assert.equal(await statusAt('127.0.0.2', port, '/healthz'), 'ECONNREFUSED', 'only the configured interface answers');
  // Probes need no token; they learn nothing but up or down.
  await eventually('the worker is healthy', 10_000, async () => ((await statusAt('127.0.0.1', port, '/healthz')) === 200 ? true : undefined));

  const none = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('content-type'), 'application/problem+json');
  const problem = (await none.json()) as { code: string; status: number };
  assert.equal(problem.code, 'invalid_credential');
  assert.equal(problem.status, 401);
  assert.equal(await statusAt('127.0.0.1', port, '/metrics', `${TOKEN}x`), 401);
  assert.equal(await statusAt('127.0.0.1', port, '/metrics', TOKEN.slice(0, -1)), 401);
  const ok = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(ok.status, 200);
  assert.match(await ok.text(), /^# TYPE paddock_/m);
});

test('PADDOCK_WORKER_METRICS_HOST chooses the interface', async () => {
  const worker = await startWorker({ PADDOCK_WORKER_METRICS_HOST: '127.0.0.2' });
  assert.equal(await statusAt('127.0.0.2', worker.metricsPort, '/metrics', TOKEN), 200);
  assert.equal(await statusAt('127.0.0.1', worker.metricsPort, '/metrics', TOKEN), 'ECONNREFUSED');
});
