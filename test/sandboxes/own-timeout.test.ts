import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox, waitForSandbox } from '../helpers/sandboxes.ts';
import { assertEventsMatchTransitions } from '../helpers/events.ts';
import { jobCatalogue } from '../../shared/jobs/catalogue.ts';
import { destroySandbox } from '../../workers/processors/destroy-sandbox.ts';
import { PaddockApiError, PaddockClient } from '../../shared/sdk/index.ts';

// A sandbox's own timeout (docs/api.md, POST /v1/sandboxes/{id}/timeout): its expiresAt, the
// reaper's delayed job and the expiring warning follow it, earlier or later, never past the cap.
// A thirty-second cap, a two-second warning; the sweep slower than the delayed jobs, so that what
// ends a sandbox at its own end is its moved job.
const CAP = 30;
const stack = await startSandboxStack({
  overrides: { PADDOCK_SESSION_CAP_SECONDS: String(CAP), PADDOCK_EXPIRY_WARNING_SECONDS: '2', PADDOCK_REAPER_SWEEP_SECONDS: '5', PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10' },
});
const url = stack.url;
const db = () => stack.apis[0]!.deps.pg;
const worker = () => stack.workers[0]!.deps;

const setTimeoutOf = (key: string, id: string, timeoutSeconds: unknown) => call(url, 'POST', `/v1/sandboxes/${id}/timeout`, { token: key, body: { timeoutSeconds } });

async function eventsOf(key: string, id: string): Promise<any[]> {
  const res = await call(url, 'GET', '/v1/events', { token: key });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data.filter((e: any) => e.data?.sandbox?.id === id);
}

/** Waits for the sandbox's destruction and checks it came at its own end: not before, and within the delayed job's reach. */
async function endedAtItsEnd(key: string, id: string): Promise<any> {
  const gone = await waitForSandbox(url, key, id, (x) => x.state === 'destroyed', 30_000);
  assert.equal(gone.destroyReason, 'expired');
  const lag = Date.parse(gone.destroyedAt) - Date.parse(gone.expiresAt);
  assert.ok(lag >= 0, `destroyed ${-lag} ms before its expiresAt`);
  // The delayed job's reach on a loaded host (4.6 s seen on a busy two-core one).
  assert.ok(lag < 6000, `destroyed ${lag} ms after its expiresAt`);
  return gone;
}

test('created with a timeout of its own: expiresAt is createdAt + it, warned before, and reaped at it', async () => {
  const a = await newAccount(url, 'own-timeout');
  // Long enough for a create on a loaded host, its warning (2 s before its end) after its start: the
  // Kubernetes stand-in's create took over four seconds, and over six on a busy two-core host.
  const created = await createSandbox(url, a.key, '', { timeoutSeconds: 14 });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.status, 'running');
  assert.equal(Date.parse(created.body.expiresAt) - Date.parse(created.body.createdAt), 14_000);
  await endedAtItsEnd(a.key, created.body.id);
  const events = await eventsOf(a.key, created.body.id);
  assert.deepEqual(events.map((e) => e.type), ['sandbox.created', 'sandbox.running', 'sandbox.expiring', 'sandbox.destroyed']);
  assert.equal(events[2].data.sandbox.expiresAt, created.body.expiresAt);
  assert.equal((await worker().runtime.get(created.body.id))?.status ?? 'gone', 'gone');
  await assertEventsMatchTransitions(db(), { accountId: a.id });
});

test('moved later, the old end does nothing; moved earlier again, the sandbox is warned and reaped at the new end', async () => {
  const a = await newAccount(url, 'moved');
  const { body: s } = await createSandbox(url, a.key, '', { timeoutSeconds: 8 });
  assert.equal(s.status, 'running');
  // Read once first, so that the account's cached view holds the old end: the move must replace it.
  assert.equal((await call(url, 'GET', `/v1/sandboxes/${s.id}`, { token: a.key })).body.expiresAt, s.expiresAt);
  const later = await setTimeoutOf(a.key, s.id, 20);
  assert.equal(later.status, 200, JSON.stringify(later.body));
  const laterEnd = Date.parse(later.body.expiresAt);
  assert.ok(laterEnd > Date.parse(s.expiresAt) + 10_000, `${later.body.expiresAt} after ${s.expiresAt}`);
  assert.equal(later.body.id, s.id);
  assert.equal((await call(url, 'GET', `/v1/sandboxes/${s.id}`, { token: a.key })).body.expiresAt, later.body.expiresAt);

  // The create's job is dropped; one left behind (dropped too late, or by a replica's race) finds the sandbox not due.
  const queue = worker().queue;
  assert.equal(await queue.getJob(jobCatalogue.expire.jobId({ sandboxId: s.id })), undefined);
  assert.equal(await queue.getJobState(jobCatalogue.expire.jobId({ sandboxId: s.id, at: laterEnd })), 'delayed');
  assert.equal(await destroySandbox(worker(), s.id, 'expired', 'expire-job'), 'not-due');
  assert.equal(await worker().sandboxes.warnExpiring(s.id), false, 'not warned before its warning is due');
  assert.equal((await call(url, 'GET', `/v1/sandboxes/${s.id}`, { token: a.key })).body.status, 'running');

  const earlier = await setTimeoutOf(a.key, s.id, 3);
  assert.equal(earlier.status, 200, JSON.stringify(earlier.body));
  assert.ok(Date.parse(earlier.body.expiresAt) < laterEnd);
  assert.equal(await queue.getJob(jobCatalogue.expire.jobId({ sandboxId: s.id, at: laterEnd })), undefined);
  const gone = await endedAtItsEnd(a.key, s.id);
  assert.equal(gone.expiresAt, earlier.body.expiresAt);
  const events = await eventsOf(a.key, s.id);
  const warnings = events.filter((e) => e.type === 'sandbox.expiring');
  assert.equal(warnings.length, 1, JSON.stringify(events.map((e) => [e.type, e.data.sandbox.expiresAt])));
  assert.equal(warnings[0].data.sandbox.expiresAt, earlier.body.expiresAt);
  assert.ok(Date.parse(warnings[0].createdAt) <= Date.parse(earlier.body.expiresAt));
  await assertEventsMatchTransitions(db(), { accountId: a.id });
});

test('warned, then moved later: warned again before the new end', async () => {
  const a = await newAccount(url, 'rewarned');
  const { body: s } = await createSandbox(url, a.key, '', { timeoutSeconds: 2 });
  // A two-second timeout is within the two-second warning: warned at once.
  await waitForSandbox(url, a.key, s.id, () => true);
  const first = await (async () => {
    for (let i = 0; i < 100; i++) {
      const w = (await eventsOf(a.key, s.id)).find((e) => e.type === 'sandbox.expiring');
      if (w) return w;
      await sleep(50);
    }
    assert.fail('no first warning');
  })();
  const moved = await setTimeoutOf(a.key, s.id, 4);
  if (moved.status === 409) return; // Reaped first on a slow host: nothing left to show.
  assert.equal(moved.status, 200, JSON.stringify(moved.body));
  await endedAtItsEnd(a.key, s.id);
  const warnings = (await eventsOf(a.key, s.id)).filter((e) => e.type === 'sandbox.expiring');
  assert.equal(warnings.length, 2);
  assert.equal(warnings[0].id, first.id);
  assert.equal(warnings[1].data.sandbox.expiresAt, moved.body.expiresAt);
  await assertEventsMatchTransitions(db(), { accountId: a.id });
});

test('past the cap: 422 timeout_past_cap with the latest expiresAt; a create past it is a 400; bad values are 400', async () => {
  const a = await newAccount(url, 'cap');
  const { body: s } = await createSandbox(url, a.key, '?wait=false');
  const past = await setTimeoutOf(a.key, s.id, CAP + 5);
  assertProblem(past, 422, 'timeout_past_cap');
  assert.equal(past.body.expiresAt, new Date(Date.parse(s.createdAt) + CAP * 1000).toISOString());
  assert.equal((await call(url, 'GET', `/v1/sandboxes/${s.id}`, { token: a.key })).body.expiresAt, s.expiresAt);
  // A pending sandbox's end moves too.
  const within = await setTimeoutOf(a.key, s.id, CAP - 10);
  assert.equal(within.status, 200, JSON.stringify(within.body));
  assertProblem(await createSandbox(url, a.key, '', { timeoutSeconds: CAP + 1 }), 400, 'invalid_request');
  for (const bad of [0, -1, 1.5, '10', null, 1e12]) {
    assertProblem(await setTimeoutOf(a.key, s.id, bad), 400, 'invalid_request');
    assertProblem(await createSandbox(url, a.key, '', { timeoutSeconds: bad }), 400, 'invalid_request');
  }
  assertProblem(await call(url, 'POST', `/v1/sandboxes/${s.id}/timeout`, { token: a.key, body: {} }), 400, 'invalid_request');
  assertProblem(await call(url, 'POST', `/v1/sandboxes/${s.id}/timeout`, { token: a.key, body: { timeoutSeconds: 5, extra: 1 } }), 400, 'invalid_request');
  await call(url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
});

test("another account's sandbox answers 404 and keeps its end; a destroyed one answers 409 sandbox_not_running", async () => {
  const a = await newAccount(url, 'owner');
  const b = await newAccount(url, 'intruder');
  const { body: s } = await createSandbox(url, a.key, '?wait=false');
  assertProblem(await setTimeoutOf(b.key, s.id, 5), 404, 'sandbox_not_found');
  assertProblem(await setTimeoutOf(b.key, 'sbx_000000000000000000000000', 5), 404, 'sandbox_not_found');
  assert.equal((await call(url, 'GET', `/v1/sandboxes/${s.id}`, { token: a.key })).body.expiresAt, s.expiresAt);
  const del = await call(url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
  assert.equal(del.body.state, 'destroyed');
  const refused = await setTimeoutOf(a.key, s.id, 5);
  assertProblem(refused, 409, 'sandbox_not_running');
  assert.match(refused.body.detail, /terminated/);
});

test('two moves at once leave the row, its job and the runtime on one end; a move racing the reaper either extends it or finds it destroyed', async () => {
  const a = await newAccount(url, 'races');
  const { body: s } = await createSandbox(url, a.key, '', { timeoutSeconds: 20 });
  const [x, y] = await Promise.all([setTimeoutOf(a.key, s.id, 12), setTimeoutOf(a.key, s.id, 25)]);
  assert.equal(x.status, 200, JSON.stringify(x.body));
  assert.equal(y.status, 200, JSON.stringify(y.body));
  const row = (await call(url, 'GET', `/v1/sandboxes/${s.id}`, { token: a.key })).body;
  assert.ok([x.body.expiresAt, y.body.expiresAt].includes(row.expiresAt));
  assert.equal(await worker().queue.getJobState(jobCatalogue.expire.jobId({ sandboxId: s.id, at: Date.parse(row.expiresAt) })), 'delayed');

  // The reaper's destroy and a move, at the sandbox's end: one of them applies, never both.
  const short = await setTimeoutOf(a.key, s.id, 1);
  assert.equal(short.status, 200);
  await sleep(Math.max(0, Date.parse(short.body.expiresAt) - Date.now()));
  const [swept, extended] = await Promise.all([destroySandbox(worker(), s.id, 'expired', 'sweep'), setTimeoutOf(a.key, s.id, 10)]);
  if (extended.status === 200) {
    assert.notEqual(swept, 'destroyed');
    assert.equal((await call(url, 'GET', `/v1/sandboxes/${s.id}`, { token: a.key })).body.status, 'running');
    await call(url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: a.key });
  } else {
    assertProblem(extended, 409, 'sandbox_not_running');
    const gone = await waitForSandbox(url, a.key, s.id, (z) => z.state === 'destroyed', 10_000);
    assert.equal(gone.destroyReason, 'expired');
  }
  await assertEventsMatchTransitions(db(), { accountId: a.id });
});

test('through the SDK: createSandbox({ timeoutSeconds }) and setSandboxTimeout, its refusal a PaddockApiError with the latest expiresAt', async () => {
  const a = await newAccount(url, 'sdk');
  const client = new PaddockClient({ baseUrl: url, apiKey: a.key });
  const s = await client.createSandbox({ timeoutSeconds: 20, wait: false });
  assert.equal(Date.parse(s.expiresAt) - Date.parse(s.createdAt), 20_000);
  const moved = await client.setSandboxTimeout(s.id, 25);
  assert.ok(Date.parse(moved.expiresAt) > Date.parse(s.expiresAt));
  await assert.rejects(client.setSandboxTimeout(s.id, CAP * 2), (err) => {
    assert.ok(err instanceof PaddockApiError);
    assert.equal(err.code, 'timeout_past_cap');
    assert.equal(err.problem?.expiresAt, new Date(Date.parse(s.createdAt) + CAP * 1000).toISOString());
    return true;
  });
  await client.destroySandbox(s.id);
});
