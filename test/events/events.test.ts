import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox, waitForSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { assertEventsMatchTransitions } from '../helpers/events.ts';
import { jobCatalogue } from '../../shared/jobs/catalogue.ts';

// Events (docs/api.md, "Events and webhooks"): recorded with the transition that causes them, listed
// with `after`, streamed (Server-Sent Events) by any API replica and resumed from Last-Event-ID.
// Two API instances share one worker: a stream on the second sees what the first and the worker did.

const stack = await startSandboxStack({
  apis: 2,
  overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10', PADDOCK_EVENT_STREAMS_PER_ACCOUNT: '2' },
});
const [a, b] = stack.apis.map((api) => api.url) as [string, string];
const db = () => stack.apis[0]!.deps.pg;
// A twenty-second cap (a create on a busy host can take seconds), warned of twelve seconds ahead,
// and a one-second sweep: a sweep held up for seconds on a loaded host still finds the warning due
// before the cap (six seconds ahead missed it, with four test files at once on two cores).
const short = await startSandboxStack({
  overrides: { PADDOCK_SESSION_CAP_SECONDS: '20', PADDOCK_EXPIRY_WARNING_SECONDS: '12', PADDOCK_REAPER_SWEEP_SECONDS: '1' },
});
const c = short.url;
const shortDb = () => short.apis[0]!.deps.pg;

async function events(url: string, key: string, query = ''): Promise<any[]> {
  const res = await call(url, 'GET', `/v1/events${query}`, { token: key });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

const ofSandbox = (list: any[], id: string) => list.filter((e) => e.data?.sandbox?.id === id);

test('a sandbox created, run and destroyed has exactly sandbox.created, running, destroyed, each carrying the sandbox as it was', async () => {
  const acct = await newAccount(a, 'events');
  const { body: s } = await createSandbox(a, acct.key);
  assert.equal(s.status, 'running');
  const del = await call(a, 'DELETE', `/v1/sandboxes/${s.id}`, { token: acct.key });
  assert.equal(del.body.state, 'destroyed');
  const list = ofSandbox(await events(b, acct.key), s.id);
  assert.deepEqual(list.map((e) => e.type), ['sandbox.created', 'sandbox.running', 'sandbox.destroyed']);
  for (const e of list) {
    assert.match(e.id, /^evt_[0-9a-z]{24}$/);
    assert.ok(Date.parse(e.createdAt) > 0);
    assert.deepEqual(Object.keys(e).sort(), ['createdAt', 'data', 'id', 'type']);
  }
  assert.equal(list[0].data.sandbox.status, 'pending');
  assert.equal(list[1].data.sandbox.status, 'running');
  assert.equal(list[1].data.sandbox.readyAt, s.readyAt);
  assert.deepEqual(list[2].data.sandbox, { ...del.body });
  assert.equal(list[2].data.sandbox.destroyReason, 'user');
  await assertEventsMatchTransitions(db(), { accountId: acct.id });
});

test('expiry: sandbox.expiring PADDOCK_EXPIRY_WARNING_SECONDS before the cap, then sandbox.destroyed with reason expired', async () => {
  const acct = await newAccount(c, 'expiring');
  const { body: s } = await createSandbox(c, acct.key);
  const gone = await waitForSandbox(c, acct.key, s.id, (x) => x.state === 'destroyed', 40_000);
  const list = ofSandbox(await events(c, acct.key), s.id);
  assert.deepEqual(list.map((e) => e.type), ['sandbox.created', 'sandbox.running', 'sandbox.expiring', 'sandbox.destroyed']);
  const warnedAhead = Date.parse(s.expiresAt) - Date.parse(list[2].createdAt);
  assert.ok(warnedAhead > 10500 && warnedAhead <= 12200, `warned ${warnedAhead} ms ahead`);
  assert.equal(list[3].data.sandbox.destroyReason, 'expired');
  assert.equal(list[3].data.sandbox.destroyedAt, gone.destroyedAt);
  await assertEventsMatchTransitions(shortDb(), { accountId: acct.id });
});

test('with the delayed warning job lost, the sweep records sandbox.expiring, once', async () => {
  const acct = await newAccount(c, 'backstop');
  const { body: s } = await createSandbox(c, acct.key);
  const removed = await short.workers[0]!.deps.queue.remove(jobCatalogue.expiring.jobId({ sandboxId: s.id }));
  assert.equal(removed, 1);
  await waitForSandbox(c, acct.key, s.id, (x) => x.state === 'destroyed', 40_000);
  const list = ofSandbox(await events(c, acct.key), s.id);
  assert.deepEqual(list.map((e) => e.type), ['sandbox.created', 'sandbox.running', 'sandbox.expiring', 'sandbox.destroyed']);
  await assertEventsMatchTransitions(shortDb(), { accountId: acct.id });
});

test('a sandbox that never becomes ready: sandbox.created, sandbox.failed, sandbox.destroyed (reason failed)', async () => {
  const quiet = await startSandboxStack({ workers: 0, overrides: { PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS: '1' } });
  const acct = await newAccount(quiet.url, 'failed');
  const res = await createSandbox(quiet.url, acct.key, '?wait=false');
  await sleep(1500);
  await quiet.addWorker({ reaper: false });
  await waitForSandbox(quiet.url, acct.key, res.body.id, (x) => x.state === 'destroyed', 10_000);
  const list = ofSandbox(await events(quiet.url, acct.key), res.body.id);
  assert.deepEqual(list.map((e) => e.type), ['sandbox.created', 'sandbox.failed', 'sandbox.destroyed']);
  assert.equal(list[2].data.sandbox.status, 'failed');
  assert.equal(list[2].data.sandbox.destroyReason, 'failed');
  await assertEventsMatchTransitions(quiet.apis[0]!.deps.pg, { accountId: acct.id });
});

test('the list: oldest first, ?after= and ?limit= page through it; unknown or foreign cursors answer 404', async () => {
  const acct = await newAccount(a, 'paging');
  const other = await newAccount(a, 'paging-other');
  const s1 = (await createSandbox(a, acct.key)).body;
  await call(a, 'DELETE', `/v1/sandboxes/${s1.id}`, { token: acct.key });
  const all = await events(a, acct.key);
  assert.equal(all.length, 3);
  const first = await events(a, acct.key, '?limit=1');
  assert.deepEqual(first, all.slice(0, 1));
  assert.deepEqual(await events(a, acct.key, `?after=${all[0].id}`), all.slice(1));
  assert.deepEqual(await events(a, acct.key, `?after=${all[2].id}`), []);
  assert.deepEqual(await events(b, other.key), []);
  assertProblem(await call(a, 'GET', `/v1/events?after=${all[0].id}`, { token: other.key }), 404, 'event_not_found');
  assertProblem(await call(a, 'GET', '/v1/events?after=evt_000000000000000000000000', { token: acct.key }), 404, 'event_not_found');
  assertProblem(await call(a, 'GET', '/v1/events?after=sbx_x', { token: acct.key }), 404, 'event_not_found');
  assertProblem(await call(a, 'GET', '/v1/events?limit=0', { token: acct.key }), 400, 'invalid_request');
  assertProblem(await call(a, 'GET', '/v1/events?since=1', { token: acct.key }), 400, 'invalid_request');
  assertProblem(await call(a, 'GET', '/v1/events', { token: acct.key, headers: { accept: 'text/html' } }), 406, 'not_acceptable');
});

/** Reads a Server-Sent Events response, frame by frame. */
async function openStream(url: string, key: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const res = await fetch(`${url}/v1/events`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const frames: { id?: string; event?: string; data?: any }[] = [];
  let buffer = '';
  const reading = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const f: { id?: string; event?: string; data?: any } = {};
          for (const line of frame.split('\n')) {
            if (line.startsWith('id: ')) f.id = line.slice(4);
            else if (line.startsWith('event: ')) f.event = line.slice(7);
            else if (line.startsWith('data: ')) f.data = JSON.parse(line.slice(6));
          }
          if (f.id) frames.push(f);
        }
      }
    } catch {
      // aborted
    }
  })();
  return { res, frames, close: async () => { controller.abort(); await reading; } };
}

test('the stream: served by another API replica than the one that recorded, in order, and resumed from Last-Event-ID', async () => {
  const acct = await newAccount(a, 'stream');
  const stream = await openStream(b, acct.key);
  assert.equal(stream.res.status, 200);
  assert.match(stream.res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const { body: s } = await createSandbox(a, acct.key);
  await call(a, 'DELETE', `/v1/sandboxes/${s.id}`, { token: acct.key });
  await eventually('three events streamed', 10_000, async () => (stream.frames.length >= 3 ? true : undefined));
  assert.deepEqual(stream.frames.map((f) => f.event), ['sandbox.created', 'sandbox.running', 'sandbox.destroyed']);
  const listed = await events(a, acct.key);
  assert.deepEqual(stream.frames.map((f) => f.data), listed);
  assert.deepEqual(stream.frames.map((f) => f.id), listed.map((e) => e.id));
  await stream.close();

  // Resumed after the first: the two that followed, then new ones as they come.
  const resumed = await openStream(a, acct.key, { 'last-event-id': listed[0].id });
  await eventually('the missed events', 10_000, async () => (resumed.frames.length >= 2 ? true : undefined));
  assert.deepEqual(resumed.frames.map((f) => f.id), listed.slice(1).map((e) => e.id));
  const { body: s2 } = await createSandbox(a, acct.key, '?wait=false');
  await eventually('the new sandbox', 10_000, async () => (resumed.frames.some((f) => f.data.data.sandbox?.id === s2.id) ? true : undefined));
  await resumed.close();
  await call(a, 'DELETE', `/v1/sandboxes/${s2.id}`, { token: acct.key });
});

test('streams are capped per account and API process (429 too_many_in_flight); a closed one frees its place', async () => {
  const acct = await newAccount(a, 'streamcap');
  const one = await openStream(a, acct.key);
  const two = await openStream(a, acct.key);
  assertProblem(await call(a, 'GET', '/v1/events', { token: acct.key, headers: { accept: 'text/event-stream' } }), 429, 'too_many_in_flight');
  const elsewhere = await openStream(b, acct.key);
  assert.equal(elsewhere.res.status, 200);
  await one.close();
  const again = await eventually('a place again', 5000, async () => {
    const s = await openStream(a, acct.key);
    if (s.res.status === 200) return s;
    await s.close();
    return undefined;
  });
  for (const s of [two, elsewhere, again]) await s.close();
});

test('usage.threshold at 80% and 100% of the monthly sandbox-hours, once each', async () => {
  const acct = await newAccount(c, 'usage');
  // 0.001 h = 3.6 s of sandbox time this month.
  await shortDb().query('update accounts set monthly_sandbox_hours_limit = 0.001 where id = $1', [acct.id]);
  const { body: s } = await createSandbox(c, acct.key);
  const seen = await eventually('both thresholds', 20_000, async () => {
    const t = (await events(c, acct.key)).filter((e) => e.type === 'usage.threshold');
    return t.length >= 2 ? t : undefined;
  });
  assert.deepEqual(seen.map((e) => e.data.threshold), [80, 100]);
  assert.equal(seen[1].data.usage.sandboxHours.limit, 0.001);
  assert.ok(seen[1].data.usage.sandboxHours.used >= 0.001);
  await call(c, 'DELETE', `/v1/sandboxes/${s.id}`, { token: acct.key });
  await sleep(2500); // two more sweeps
  assert.equal((await events(c, acct.key)).filter((e) => e.type === 'usage.threshold').length, 2);
});
