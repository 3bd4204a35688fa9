import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startReplicas } from '../helpers/replicas.ts';
import { concurrentCapScenario, lifecycleScenario, rateLimitRaceScenario } from './scenarios.ts';

// The lifecycle, quota and rate-limit scenarios through two real `web` and two real `worker`
// processes behind one base URL, on one PostgreSQL and one Redis.

const CAP = 2;
const OPS_PER_MIN = 10;
const replicas = await startReplicas({
  webs: 2,
  workers: 2,
  overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: String(CAP), PADDOCK_RATE_SANDBOX_OPS_PER_MIN: String(OPS_PER_MIN) },
});

const served = (i: number) => (replicas.webs[i]!.output().match(/"msg":"request"/g) ?? []).length;

test('create, get, list and destroy through two webs and two workers', async () => {
  await lifecycleScenario(replicas.url, replicas.config.PADDOCK_SESSION_CAP_SECONDS);
});

test('20 parallel creates through the replicas give exactly the concurrent cap', async () => {
  await concurrentCapScenario(replicas.url, CAP);
});

test('a rate-limit bucket raced through the replicas lets exactly its capacity through', async () => {
  await rateLimitRaceScenario(replicas.url, OPS_PER_MIN);
});

test('both webs served requests, and every process is still up', () => {
  assert.ok(served(0) > 5 && served(1) > 5, `requests served: ${served(0)}, ${served(1)}`);
  for (const p of [...replicas.webs, ...replicas.workers]) assert.ok(p.alive(), `${p.role} ${p.index} died: ${p.output().slice(-2000)}`);
  assert.equal(replicas.proxyErrors(), 0);
});
