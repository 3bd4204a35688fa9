import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startReplicas } from '../helpers/replicas.ts';
import { call } from '../helpers/http.ts';
import { localPreviewHost, openPreview, previewSession, servePreviewProgram } from '../helpers/previews.ts';
import { fetchPreviewUrl } from '../helpers/preview-fetch.ts';
import { authBucketRaceScenario, concurrentCapScenario, lifecycleCountdownScenario, rateLimitRaceScenario } from './scenarios.ts';

// test-plan: once (the control plane's processes and stores fail here; what they ask of the
// runtime meanwhile is what the lifecycle suites drive on both runtimes)

// Quota and rate-limit scenarios through two real `web` and two real `worker` processes, on one
// PostgreSQL and one Redis: every limit holds across the replicas, not per process. (`npm test`
// also runs the lifecycle and quota suites through such replicas: PADDOCK_TEST_DEPLOYMENT.)

const CAP = 2;
const OPS_PER_MIN = 10;
const LIFECYCLE_PER_MIN = 30; // above the 20 creates and 2 destroys of the cap scenario's account
const AUTH_PER_MIN = 10;
const replicas = await startReplicas({
  webs: 2,
  workers: 2,
  overrides: {
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: String(CAP),
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: String(OPS_PER_MIN),
    PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: String(LIFECYCLE_PER_MIN),
    // The suite's own signups come from the proxy's address, each race from an address of its own.
    PADDOCK_RATE_AUTH_PER_MIN: String(AUTH_PER_MIN),
    PADDOCK_TRUST_PROXY: 'true',
    // The bucket race sends 30 file operations at once: only the bucket may refuse them here
    // (admission control has its own suite, test/security/admission.test.ts).
    PADDOCK_INFLIGHT_FILES_PER_SANDBOX: '100',
    PADDOCK_INFLIGHT_FILES_PER_ACCOUNT: '100',
  },
});
const webs = () => replicas.webs.map((w) => w.url);
const served = (i: number) => (replicas.webs[i]!.output().match(/"msg":"request"/g) ?? []).length;

test('20 parallel creates through the replicas give exactly the concurrent cap', async () => {
  await concurrentCapScenario(replicas.url, CAP);
});

test('a rate-limit bucket raced through the replicas lets exactly its capacity through', async () => {
  await rateLimitRaceScenario(replicas.url, OPS_PER_MIN);
});

test('one sandbox_lifecycle count goes down across both webs, then 429 with Retry-After', async () => {
  await lifecycleCountdownScenario(webs(), LIFECYCLE_PER_MIN);
});

test('signups and logins from one address racing across both webs share one per-IP bucket', async () => {
  await authBucketRaceScenario(webs(), AUTH_PER_MIN);
});

test('a preview token let through by both webs is refused by either once revoked through one; a port made private again asks for it at once', async () => {
  const [a, b] = webs() as [string, string];
  const s = await previewSession(a, {});
  await servePreviewProgram(a, s, ['python3', '-m', 'http.server', '8000', '--bind', '127.0.0.1'], 8000);
  const p = await openPreview(a, s, 8000);
  const get = (web: string, headers: Record<string, string> = {}) => fetchPreviewUrl(`http://${localPreviewHost(web, s.id, 8000)}/`, headers).then((r) => r.status);
  const token = { 'x-paddock-preview-token': p.token };
  // Let through more than once by each web: what decided it is kept by then.
  for (const web of [a, b, a, b]) assert.equal(await get(web, token), 200);
  await openPreview(b, s, 8000, { public: true });
  for (const web of [a, b]) assert.equal(await get(web), 200);
  await openPreview(b, s, 8000, { public: false });
  for (const web of [a, b]) assert.equal(await get(web), 401);
  for (const web of [a, b]) assert.equal(await get(web, token), 200);
  const revoked = await call(b, 'DELETE', `/v1/sandboxes/${s.id}/previews/8000`, { token: s.account.key });
  assert.equal(revoked.status, 204, JSON.stringify(revoked.body));
  for (const web of [a, b]) assert.equal(await get(web, token), 401);
});

test('both webs served requests, and every process is still up', () => {
  assert.ok(served(0) > 5 && served(1) > 5, `requests served: ${served(0)}, ${served(1)}`);
  for (const p of [...replicas.webs, ...replicas.workers]) assert.ok(p.alive(), `${p.role} ${p.index} died: ${p.output().slice(-2000)}`);
  assert.equal(replicas.proxyErrors(), 0);
});
