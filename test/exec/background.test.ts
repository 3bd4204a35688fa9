import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApi } from '../../api/server.ts';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';

// Background processes (docs/api.md, "Background processes"): started by exec with background: true,
// listed, read (and followed), written to and signalled, all through short execs in the sandbox,
// where the process and its kept output live. Run on both runtimes (PADDOCK_TEST_RUNTIMES).

const KEEP = 4096;
const MAX = 3;
const stack = await startSandboxStack({
  apis: 2,
  overrides: {
    PADDOCK_PROCESS_OUTPUT_KEEP_BYTES: String(KEEP),
    PADDOCK_PROCESS_MAX_PER_SANDBOX: String(MAX),
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10',
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '100000',
    PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: '1000',
  },
});

const ID = /^proc_[0-9a-z]{24}$/;

interface Session {
  account: TestAccount;
  id: string;
  url: string;
}

async function session(account?: TestAccount): Promise<Session> {
  const a = account ?? (await newAccount(stack.url, 'procs'));
  const s = await createSandbox(stack.url, a.key);
  assert.equal(s.status, 201, JSON.stringify(s.body));
  return { account: a, id: s.body.id, url: stack.url };
}

const start = (s: Session, body: Record<string, unknown>, url = s.url) =>
  call(url, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: s.account.key, body: { ...body, background: true } });

async function started(s: Session, body: Record<string, unknown>): Promise<string> {
  const res = await start(s, body);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.match(res.body.id, ID);
  return res.body.id;
}

const list = (s: Session, url = s.url) => call(url, 'GET', `/v1/sandboxes/${s.id}/processes`, { token: s.account.key });

async function find(s: Session, procId: string, url = s.url) {
  const res = await list(s, url);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return (res.body.data as any[]).find((p) => p.id === procId);
}

/** The output as NDJSON lines; a problem document as { status, problem }. */
async function output(s: Session, procId: string, follow = false, url = s.url): Promise<{ status: number; lines: any[]; problem?: any }> {
  const res = await fetch(`${url}/v1/sandboxes/${s.id}/processes/${procId}/output${follow ? '?follow=true' : ''}`, {
    headers: { authorization: `Bearer ${s.account.key}` },
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  if (res.status !== 200) return { status: res.status, lines: [], problem: JSON.parse(text) };
  assert.match(res.headers.get('content-type') ?? '', /application\/x-ndjson/);
  return { status: 200, lines: text.trim() ? text.trim().split('\n').map((l) => JSON.parse(l)) : [] };
}

const joined = (lines: any[], type: 'stdout' | 'stderr') => lines.filter((l) => l.type === type).map((l) => l.data).join('');

const stop = (s: Session, procId: string, signal?: string) =>
  call(s.url, 'DELETE', `/v1/sandboxes/${s.id}/processes/${procId}${signal ? `?signal=${signal}` : ''}`, { token: s.account.key });

const stdin = (s: Session, procId: string, data: string) =>
  call(s.url, 'POST', `/v1/sandboxes/${s.id}/processes/${procId}/stdin`, { token: s.account.key, body: { data } });

const exec = (s: Session, command: string) => call(s.url, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: s.account.key, body: { command } });

test('start answers 202 at once; the process runs on, is listed, its output read; TERM ends it', async () => {
  const s = await session();
  const t0 = Date.now();
  const res = await start(s, { command: "echo hi; echo oops >&2; sleep 30" });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.ok(Date.now() - t0 < 10_000, 'answered without waiting for the command');
  assert.deepEqual(Object.keys(res.body).sort(), ['command', 'id', 'startedAt']);
  assert.equal(res.body.command, 'echo hi; echo oops >&2; sleep 30');
  assert.match(res.headers.get('location') ?? '', new RegExp(`/v1/sandboxes/${s.id}/processes/${res.body.id}$`));
  const id = res.body.id as string;

  const running = await find(s, id);
  assert.deepEqual(running, { id, command: res.body.command, startedAt: res.body.startedAt, status: 'running', exitCode: null, signal: null, endedAt: null });
  const out = await eventually('the output', 10_000, async () => {
    const o = await output(s, id);
    return joined(o.lines, 'stdout') === 'hi\n' && joined(o.lines, 'stderr') === 'oops\n' ? o : undefined;
  });
  assert.ok(!out.lines.some((l) => l.type === 'exit'), 'no exit line while it runs');

  assert.equal((await stop(s, id)).status, 204);
  const ended = await find(s, id);
  assert.equal(ended.status, 'exited');
  assert.equal(ended.signal, 'SIGTERM');
  assert.equal(ended.exitCode, null);
  assert.ok(Date.parse(ended.endedAt) >= Date.parse(ended.startedAt) - 1000);
  const after = await output(s, id);
  assert.deepEqual(after.lines.at(-1), { type: 'exit', exitCode: null, signal: 'SIGTERM', endedAt: ended.endedAt });
  assert.equal(joined(after.lines, 'stdout'), 'hi\n');
  // Stopping again is harmless; writing to it is refused.
  assert.equal((await stop(s, id, 'KILL')).status, 204);
  assertProblem(await stdin(s, id, 'late\n'), 409, 'process_not_running');
});

test('follow streams output as it comes and ends with the exit code', async () => {
  const s = await session();
  const id = await started(s, { command: ['sh', '-c', 'for i in 1 2 3; do echo "n$i"; sleep 0.4; done; echo bye >&2; exit 7'] });
  const t0 = Date.now();
  const res = await fetch(`${s.url}/v1/sandboxes/${s.id}/processes/${id}/output?follow=true`, { headers: { authorization: `Bearer ${s.account.key}` } });
  assert.equal(res.status, 200);
  const seen: { at: number; line: any }[] = [];
  let buffered = '';
  for await (const chunk of res.body!) {
    buffered += Buffer.from(chunk).toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      seen.push({ at: Date.now() - t0, line: JSON.parse(buffered.slice(0, nl)) });
      buffered = buffered.slice(nl + 1);
    }
  }
  const lines = seen.map((x) => x.line);
  assert.equal(joined(lines, 'stdout'), 'n1\nn2\nn3\n');
  assert.equal(joined(lines, 'stderr'), 'bye\n');
  assert.deepEqual({ ...lines.at(-1), endedAt: undefined }, { type: 'exit', exitCode: 7, signal: null, endedAt: undefined });
  const first = seen.find((x) => x.line.type === 'stdout')!;
  assert.ok(first.at < seen.at(-1)!.at - 300, `output came as it was produced (first at ${first.at} ms, end at ${seen.at(-1)!.at} ms)`);
  assert.equal((await find(s, id)).exitCode, 7);
});

test('stdin reaches the process across several writes; KILL ends it', async () => {
  const s = await session();
  const id = await started(s, { command: 'while read -r line; do echo "got $line"; done' });
  assert.equal((await stdin(s, id, 'one\n')).status, 204);
  assert.equal((await stdin(s, id, 'two\nthree\n')).status, 204);
  await eventually('the echoes', 10_000, async () => (joined((await output(s, id)).lines, 'stdout') === 'got one\ngot two\ngot three\n' ? true : undefined));
  const cat = await started(s, { command: ['cat'] });
  assert.equal((await stdin(s, cat, 'meow\n')).status, 204);
  await eventually('cat', 10_000, async () => (joined((await output(s, cat)).lines, 'stdout') === 'meow\n' ? true : undefined));
  assert.equal((await stop(s, cat, 'KILL')).status, 204);
  const killed = await find(s, cat);
  assert.equal(killed.status, 'exited');
  assert.equal(killed.signal, 'SIGKILL');
  assert.equal((await find(s, id)).status, 'running', 'the other process is untouched');
  await stop(s, id, 'KILL');
  assertProblem(await call(s.url, 'DELETE', `/v1/sandboxes/${s.id}/processes/${id}?signal=HUP`, { token: s.account.key }), 400, 'invalid_request');
});

test('the process and its output live in the sandbox: another API instance, and one started afterwards, serve them', async () => {
  const s = await session();
  const id = await started(s, { command: 'echo from-before; sleep 30' });
  const second = stack.apis[1]!.url;
  assert.equal((await find(s, id, second)).status, 'running');
  await eventually('output on the second API', 10_000, async () => (joined((await output(s, id, false, second)).lines, 'stdout') === 'from-before\n' ? true : undefined));
  // An API process that did not exist when the process started (a restart): nothing was held in memory.
  const fresh = await startApi(stack.config, { kubeConfig: stack.kubeConfig });
  try {
    assert.equal((await find(s, id, fresh.url)).status, 'running');
    assert.equal(joined((await output(s, id, false, fresh.url)).lines, 'stdout'), 'from-before\n');
  } finally {
    await fresh.close();
  }
  // Its files are in the sandbox, outside the workspace.
  const files = await exec(s, `ls /tmp/.paddock-procs/${id}; ls -A /workspace`);
  assert.match(files.body.stdout, /^command$/m);
  assert.match(files.body.stdout, /^out\.0$/m);
  assert.doesNotMatch(files.body.stdout, /paddock/);
  await stop(s, id, 'KILL');
});

test("another account's sandbox and processes are 404; forged process ids never escape", async () => {
  const victim = await session();
  const id = await started(victim, { command: 'echo private; sleep 30' });
  const attacker = await session();
  const theirs: Session = { ...victim, account: attacker.account };
  assertProblem(await list(theirs), 404, 'sandbox_not_found');
  const o = await output(theirs, id);
  assert.equal(o.status, 404);
  assert.equal(o.problem.code, 'sandbox_not_found');
  assertProblem(await stdin(theirs, id, 'x\n'), 404, 'sandbox_not_found');
  assertProblem(await stop(theirs, id, 'KILL'), 404, 'sandbox_not_found');
  assertProblem(await start(theirs, { command: 'true' }), 404, 'sandbox_not_found');
  // The victim's process id in the attacker's own sandbox: unknown there.
  assertProblem(await stop(attacker, id, 'KILL'), 404, 'process_not_found');
  assert.equal((await output(attacker, id)).problem?.code, 'process_not_found');
  assert.equal((await find(victim, id)).status, 'running', 'still running');

  // Planted files that look like a process's directory, and ids that are not ids.
  await exec(attacker, 'mkdir -p /tmp/escape /tmp/.paddock-procs/proc_zzzzzzzzzzzzzzzzzzzzzzzz && echo 1 > /tmp/escape/started');
  const forged = ['proc_zzzzzzzzzzzzzzzzzzzzzzzz', '..%2F..%2Fescape', 'proc_..%2F..%2Fescape', `${id.toUpperCase()}`, 'proc_', `${id}x`, 'proc_aaaaaaaaaaaaaaaaaaaaaaaa', 'proc_*', `proc_${'a'.repeat(500)}`];
  for (const p of forged) {
    for (const res of [
      await call(attacker.url, 'DELETE', `/v1/sandboxes/${attacker.id}/processes/${p}`, { token: attacker.account.key }),
      await call(attacker.url, 'POST', `/v1/sandboxes/${attacker.id}/processes/${p}/stdin`, { token: attacker.account.key, body: { data: 'x' } }),
    ]) {
      assert.ok(res.status === 404 || res.status === 400, `${p}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    const o2 = await output(attacker, p);
    assert.ok(o2.status === 404 || o2.status === 400, `${p}: output ${o2.status}`);
  }
  // A planted record that is not what the scripts write is not listed.
  assert.deepEqual((await list(attacker)).body.data, []);
  await stop(victim, id, 'KILL');
});

test('the allowlist is checked at start; nothing runs when it refuses', async () => {
  const s = await session();
  const put = await call(s.url, 'PUT', '/v1/allowlist', { token: s.account.key, body: { commands: ['echo'] } });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  try {
    assertProblem(await start(s, { command: ['sleep', '30'] }), 403, 'command_not_allowed');
    assertProblem(await start(s, { command: 'echo ok; touch /workspace/ran' }), 403, 'command_not_allowed');
    const allowed = await started(s, { command: ['echo', 'allowed'] });
    assert.deepEqual((await list(s)).body.data.map((p: any) => p.id), [allowed]);
  } finally {
    await call(s.url, 'DELETE', '/v1/allowlist', { token: s.account.key });
  }
  assert.equal((await exec(s, 'test -e /workspace/ran && echo ran || echo no')).body.stdout, 'no\n');
});

test('secrets reach the process and are masked in its output and its listed command; env and argv are its own', async () => {
  const s = await session();
  const value = 'bg-secret-5a8c1f';
  assert.equal((await call(s.url, 'POST', '/v1/secrets', { token: s.account.key, body: { name: 'BG_TOKEN', value } })).status, 201);
  const id = await started(s, { command: `echo "v=$BG_TOKEN"; echo "$BG_TOKEN" >&2; echo literal ${value}; sleep 30` });
  const o = await eventually('masked output', 10_000, async () => {
    const r = await output(s, id);
    return joined(r.lines, 'stdout').includes('literal') ? r : undefined;
  });
  assert.equal(joined(o.lines, 'stdout'), 'v=***\nliteral ***\n');
  assert.equal(joined(o.lines, 'stderr'), '***\n');
  const listed = await find(s, id);
  assert.ok(!JSON.stringify(listed).includes(value), JSON.stringify(listed));
  assert.match(listed.command, /literal \*\*\*/);
  await stop(s, id, 'KILL');

  // Names the scripts use for themselves (D, K, PATH…) are the command's to set; argv is passed as given.
  const env = await started(s, { command: ['sh', '-c', 'echo "$D|$K|$PATH|$1"', 'sh', '$(id) `id` ; rm -rf /'], env: { D: 'mine', K: 'kk', PATH: '/usr/bin:/bin' } });
  await eventually('env', 10_000, async () => (joined((await output(s, env)).lines, 'stdout') === 'mine|kk|/usr/bin:/bin|$(id) `id` ; rm -rf /\n' ? true : undefined));
  assert.equal((await find(s, env)).command, `sh -c 'echo "$D|$K|$PATH|$1"' sh '$(id) \`id\` ; rm -rf /'`);
});

test('only the last PADDOCK_PROCESS_OUTPUT_KEEP_BYTES of each stream are kept, on disk too', async () => {
  const s = await session();
  const id = await started(s, { command: 'seq 1 20000; head -c 300000 /dev/zero | tr "\\0" e >&2' });
  const ended = await eventually('the end', 60_000, async () => ((await find(s, id))?.status === 'exited' ? true : undefined));
  assert.ok(ended);
  const o = await output(s, id);
  const all = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');
  assert.equal(joined(o.lines, 'stdout'), all.slice(-KEEP));
  assert.equal(joined(o.lines, 'stderr'), 'e'.repeat(KEEP));
  assert.equal(o.lines.at(-1).exitCode, 0);
  const du = await exec(s, `cat /tmp/.paddock-procs/${id}/out.* /tmp/.paddock-procs/${id}/err.* | wc -c`);
  assert.ok(Number(du.body.stdout.trim()) <= 4 * KEEP, `on disk: ${du.body.stdout}`);
});

test('a flood is bounded on disk while it runs, and a follower that falls behind skips ahead', async () => {
  const s = await session();
  const id = await started(s, { command: ['yes', 'flood'] });
  await sleep(1500);
  const du = await exec(s, `cat /tmp/.paddock-procs/${id}/out.* | wc -c`);
  assert.ok(Number(du.body.stdout.trim()) <= 2 * KEEP, `on disk: ${du.body.stdout}`);
  const o = await output(s, id);
  assert.ok(joined(o.lines, 'stdout').length <= KEEP);
  assert.match(joined(o.lines, 'stdout'), /^(?:[flod]*\n)?(?:flood\n)+[flod]*$/);
  assert.equal((await stop(s, id, 'KILL')).status, 204);
});

test('at most PADDOCK_PROCESS_MAX_PER_SANDBOX run at once (429 process_limit_reached), also when started together', async () => {
  const s = await session();
  const results = await Promise.all(Array.from({ length: MAX + 3 }, () => start(s, { command: 'sleep 60' })));
  const ok = results.filter((r) => r.status === 202);
  // They take turns at the count: every place is taken, none twice, and no start is refused while one is free.
  assert.equal(ok.length, MAX, results.map((r) => r.status).join(','));
  for (const r of results.filter((x) => x.status !== 202)) assertProblem(r, 429, 'process_limit_reached');
  while ((await list(s)).body.data.filter((p: any) => p.status === 'running').length < MAX) {
    if ((await start(s, { command: 'sleep 60' })).status !== 202) break;
  }
  const over = await start(s, { command: 'sleep 60' });
  assertProblem(over, 429, 'process_limit_reached');
  assert.equal(over.body.limit, MAX);
  const running = (await list(s)).body.data.filter((p: any) => p.status === 'running');
  assert.equal(running.length, MAX);
  await stop(s, running[0].id, 'KILL');
  assert.equal((await start(s, { command: 'sleep 60' })).status, 202, 'a place freed by an end is taken');
  // Ended ones are kept for their output, the most recent MAX of them: each start prunes those
  // that ended before it (each is waited out here: its end is recorded a moment after it ends).
  const ended = async (id: string) => eventually(`${id} ended`, 10_000, async () => ((await find(s, id))?.status === 'running' ? undefined : true));
  for (const p of (await list(s)).body.data) await stop(s, p.id, 'KILL');
  for (const p of (await list(s)).body.data) await ended(p.id);
  const order: string[] = [];
  for (let i = 0; i < MAX + 2; i++) {
    order.push(await started(s, { command: ['true'] }));
    await ended(order.at(-1)!);
  }
  const kept = (await list(s)).body.data.map((p: any) => p.id);
  assert.ok(kept.length <= MAX + 1, `ended processes are pruned: ${kept.length} kept`);
  // The oldest go first.
  assert.ok(!kept.includes(order[0]) && kept.includes(order.at(-2)) && kept.includes(order.at(-1)), JSON.stringify({ kept, order }));
});

test('a start that cannot take its turn at counting within 10 s is refused as busy (429 too_many_in_flight), not counted without it', async () => {
  const s = await session();
  // The tenant's own process holds the starts' lock on the processes' directory.
  const holder = await started(s, { command: 'exec flock /tmp/.paddock-procs sleep 30' });
  await eventually('the lock held', 10_000, async () => {
    const probe = await call(s.url, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: s.account.key, body: { command: 'flock -n /tmp/.paddock-procs true || echo held' } });
    return probe.body.stdout === 'held\n' ? true : undefined;
  });
  const refused = await start(s, { command: 'sleep 60' });
  assertProblem(refused, 429, 'too_many_in_flight');
  assert.equal(refused.headers.get('retry-after'), '1');
  assert.deepEqual((await list(s)).body.data.map((p: any) => p.id), [holder], 'nothing of the refused start is left');
  await stop(s, holder, 'KILL');
  assert.equal((await start(s, { command: 'true' })).status, 202, 'the turn is free again');
});

test('background refuses stdin and timeoutSeconds, and a working directory that cannot be entered', async () => {
  const s = await session();
  assertProblem(await start(s, { command: 'cat', stdin: 'x' }), 400, 'invalid_request');
  assertProblem(await start(s, { command: 'sleep 1', timeoutSeconds: 5 }), 400, 'invalid_request');
  assertProblem(await start(s, { command: 'true', cwd: '/nonexistent' }), 400, 'invalid_request');
  assertProblem(await call(s.url, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: s.account.key, body: { command: 'true', background: 'yes' } }), 400, 'invalid_request');
  assert.deepEqual((await list(s)).body.data, []);
  // A command that cannot be found ends at once with 127, as in a shell.
  const id = await started(s, { command: ['no-such-program-here'] });
  await eventually('127', 10_000, async () => ((await find(s, id))?.exitCode === 127 ? true : undefined));
});

test('a destroyed sandbox has no processes to reach', async () => {
  const s = await session();
  const id = await started(s, { command: 'sleep 60' });
  assert.equal((await call(s.url, 'DELETE', `/v1/sandboxes/${s.id}`, { token: s.account.key })).status, 200);
  assertProblem(await list(s), 409, 'sandbox_not_running');
  assertProblem(await stop(s, id), 409, 'sandbox_not_running');
});
