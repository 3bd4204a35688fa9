import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startReplicas } from '../helpers/replicas.ts';
import { newAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { uniqueEmail } from '../helpers/config.ts';
import { createSandboxQueue, jobCatalogue } from '../../shared/jobs/catalogue.ts';
import { assertConsistent, sandboxRows } from './probes.ts';
import { eventually } from '../helpers/eventually.ts';

// SIGTERM, as an orchestrator stops a process, in the middle of load: the web stops accepting,
// answers what it has in hand, and exits 0; the worker finishes the jobs it is running (none is
// left to be taken over after its lock lapses) and exits 0. Nothing accepted is lost.

const replicas = await startReplicas({
  overrides: {
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '200',
    // Real password hashing cost: signups are in flight long enough to be caught by the signal.
    PADDOCK_SCRYPT_LOG_N: '15',
    // Longer than the test: a job the stopping worker abandoned could not be taken over in time.
    PADDOCK_JOB_LOCK_SECONDS: '60',
  },
});

interface Answer {
  sentAt: number;
  answeredAt: number;
  status?: number;
  body?: any;
  /** A connection-level failure: refused, or cut before any byte of an answer. */
  error?: string;
  bytes: number;
}

/** One request on a connection of its own (no keep-alive), reporting exactly how it ended. */
function rawCall(base: string, method: string, path: string, options: { token?: string; body?: unknown } = {}): Promise<Answer> {
  const sentAt = Date.now();
  return new Promise((resolve) => {
    let bytes = 0;
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = request(
      new URL(path, base),
      {
        method,
        agent: false,
        headers: {
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
        },
        timeout: 60_000,
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          text += chunk.toString();
        });
        res.on('end', () => {
          const body: unknown = /json/.test(res.headers['content-type'] ?? '') ? JSON.parse(text) : text;
          resolve({ sentAt, answeredAt: Date.now(), status: res.statusCode, body, bytes });
        });
        res.on('error', (err) => resolve({ sentAt, answeredAt: Date.now(), status: res.statusCode, error: `cut mid-answer: ${err.message}`, bytes }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ sentAt, answeredAt: Date.now(), error: err.code ?? err.message, bytes }));
    req.end(payload);
  });
}

test('SIGTERM to a web under load: what it had in hand is answered, nothing is lost, exit 0', { timeout: 170_000 }, async () => {
  const a = await newAccount(replicas.url, 'sigterm-web');
  const web = replicas.webs[0]!;
  const signups: { email: string; answer: Answer }[] = [];
  const creates: Answer[] = [];
  let stop = false;
  const signupLoop = async () => {
    while (!stop) {
      const email = uniqueEmail('sigterm');
      const answer = await rawCall(web.url, 'POST', '/v1/auth/signup', { body: { email, password: 'correct horse battery staple' } });
      signups.push({ email, answer });
      if (answer.error) await sleep(50);
    }
  };
  let n = 0;
  const createLoop = async () => {
    while (!stop) {
      const answer = await rawCall(web.url, 'POST', '/v1/sandboxes', { token: a.key, body: { metadata: { n: String(++n) } } });
      creates.push(answer);
      if (answer.error) await sleep(50);
    }
  };
  const loops = Promise.all([...Array.from({ length: 4 }, signupLoop), ...Array.from({ length: 4 }, createLoop)]);
  await sleep(2000);

  // In hand at the signal: creates whose rows are committed and still pending (waiting for a worker).
  const inHand = (await sandboxRows(replicas.db, [a.id])).filter((r) => r.status === 'pending').map((r) => r.id);
  const signalAt = Date.now();
  const exit = replicas.kill('web', 0, 'SIGTERM');
  await sleep(1500);
  stop = true;
  await loops;
  const { code, signal } = await exit;
  assert.equal(signal, null);
  assert.equal(code, 0, web.output().slice(-3000));
  assert.match(web.output(), /"msg":"stopped"/);

  const all = [...signups.map((s) => s.answer), ...creates];
  // Every answer is a normal one; every failure is at the connection, before any byte of an answer.
  for (const x of all) {
    if (x.error) {
      assert.equal(x.bytes, 0, x.error);
      assert.ok(['ECONNREFUSED', 'ECONNRESET'].includes(x.error) || /socket hang up/.test(x.error), x.error);
    } else {
      assert.equal(x.status, 201, JSON.stringify(x.body));
    }
  }
  for (const c of creates.filter((x) => !x.error)) assert.equal(c.body.status, 'running', JSON.stringify(c.body));
  // The creates in hand at the signal were all answered, with their running sandbox.
  const answeredIds = new Set(creates.filter((x) => x.status === 201).map((x) => x.body.id as string));
  for (const id of inHand) assert.ok(answeredIds.has(id), `in-hand create of ${id} was not answered`);
  // Nothing done without an answer: every account and sandbox made is one the client was told of.
  const { rows: made } = await replicas.db.query<{ email: string }>('select email from accounts where email = any($1)', [signups.map((s) => s.email)]);
  const told = new Set(signups.filter((s) => s.answer.status === 201).map((s) => s.email));
  assert.deepEqual(made.map((r) => r.email).filter((e) => !told.has(e)), [], 'accounts made without an answer');
  assert.equal(made.length, told.size);
  const rows = await sandboxRows(replicas.db, [a.id]);
  assert.deepEqual(rows.map((r) => r.id).filter((id) => !answeredIds.has(id)), [], 'sandboxes made without an answer');
  const answeredAfterSignal = all.filter((x) => !x.error && x.sentAt < signalAt && x.answeredAt > signalAt).length;
  assert.ok(inHand.length + answeredAfterSignal > 0, 'the signal caught requests in flight');

  // The other web still serves through the same base URL.
  assert.equal((await call(replicas.url, 'GET', '/v1/sandboxes', { token: a.key })).status, 200);
  for (const r of rows) await call(replicas.url, 'DELETE', `/v1/sandboxes/${r.id}?wait=false`, { token: a.key });
  // Gone before the next test freezes a worker: one frozen halfway through a destroy would hold
  // that sandbox's lock, and a worker told to stop would wait on it past its shutdown timeout.
  await eventually('this test\'s sandboxes destroyed', 60_000, async () =>
    (await sandboxRows(replicas.db, [a.id])).every((r) => r.state === 'destroyed') ? true : undefined,
  );
  console.log(
    JSON.stringify({
      requests: all.length,
      inHandCreatesAtSignal: inHand.length,
      answeredAfterSignal,
      connectionErrors: Object.fromEntries(
        [...new Set(all.filter((x) => x.error).map((x) => x.error!))].map((e) => [
          e,
          { sentBeforeSignal: all.filter((x) => x.error === e && x.sentAt < signalAt).length, after: all.filter((x) => x.error === e && x.sentAt >= signalAt).length },
        ]),
      ),
      signups: told.size,
      sandboxes: rows.length,
    }),
  );
});

test('SIGTERM to a worker running jobs: they finish (none left to be taken over), exit 0', { timeout: 170_000 }, async () => {
  const a = await newAccount(replicas.url, 'sigterm-worker');
  const redis = new Redis(replicas.config.REDIS_URL, { maxRetriesPerRequest: null });
  const queue = createSandboxQueue(redis, replicas.config.PADDOCK_REDIS_PREFIX);
  try {
    // Worker 1 paused: every job goes to worker 0, the one stopped.
    replicas.workers[1]!.child.kill('SIGSTOP');
    const running = await Promise.all(Array.from({ length: 4 }, () => call(replicas.url, 'POST', '/v1/sandboxes', { token: a.key, body: {} })));
    for (const r of running) assert.equal(r.body.status, 'running', JSON.stringify(r.body));
    const burst = await Promise.all([
      ...Array.from({ length: 8 }, () => call(replicas.url, 'POST', '/v1/sandboxes?wait=false', { token: a.key, body: {} })),
      ...running.map((r) => call(replicas.url, 'DELETE', `/v1/sandboxes/${r.body.id}?wait=false`, { token: a.key })),
    ]);
    for (const r of burst) assert.equal(r.status >= 200 && r.status < 300, true, JSON.stringify(r.body));
    // This test's jobs only: a job of an earlier test that worker 1 took as it was stopped (the
    // queue's Lua step runs in Redis even when its client is frozen) stays active with it.
    const ours = new Set([...running, ...burst].map((r) => (r.body as { id?: string }).id).filter(Boolean));
    const active = await eventually('worker 0 running jobs', 20_000, async () => {
      const jobs = (await queue.getActive()).filter((job) => ours.has((job.data as { sandboxId?: string }).sandboxId));
      return jobs.length > 0 ? jobs : undefined;
    });
    const exit = replicas.kill('worker', 0, 'SIGTERM');
    const { code } = await exit;
    assert.equal(code, 0, replicas.workers[0]!.output().slice(-3000));
    assert.match(replicas.workers[0]!.output(), /"msg":"stopped"/);
    // Every job it was running finished before it exited: none left active for a takeover.
    for (const job of active) assert.equal(await queue.getJobState(job.id!), 'completed', `${job.name} ${job.id}`);
    assert.deepEqual((await queue.getActive()).filter((job) => ours.has((job.data as { sandboxId?: string }).sandboxId)), []);
    const rows = await sandboxRows(replicas.db, [a.id]);
    for (const job of active) {
      const sandboxId = (job.data as { sandboxId: string }).sandboxId;
      const row = rows.find((r) => r.id === sandboxId)!;
      if (job.id === jobCatalogue.create.jobId({ sandboxId })) assert.ok(row.status === 'running' || row.state === 'destroyed', JSON.stringify(row));
      else assert.equal(row.state, 'destroyed');
    }

    // The rest is waiting in the queue, not lost: the other worker takes it.
    replicas.workers[1]!.child.kill('SIGCONT');
    const settled = await eventually('the rest done by the other worker', 30_000, async () => {
      const now = await sandboxRows(replicas.db, [a.id]);
      return now.every((r) => (r.state === 'active' && r.status === 'running') || r.state === 'destroyed') ? now : undefined;
    });
    assert.equal(settled.filter((r) => r.state === 'active').length, 8);
    assert.equal(settled.filter((r) => r.state === 'destroyed').length, 4);
    await assertConsistent(replicas, [a.id]);
    console.log(JSON.stringify({ jobsRunningAtSignal: active.length, finishedBeforeExit: active.length }));
  } finally {
    replicas.workers[1]!.child.kill('SIGCONT');
    await queue.close();
    redis.disconnect();
  }
});
