import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { failsWith, json, newSession, ok, signedUpUser } from './cli-helpers.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '3' } });

test('session create waits until running and prints only the id; --json prints the sandbox', async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  const got = json(await user.run(['session', 'get', id, '--json']));
  assert.equal(got.id, id);
  assert.equal(got.status, 'running');
  assert.equal(got.state, 'active');

  const created = json(await user.run(['session', 'create', '--json', '--metadata', 'purpose=cli-test', '--env', 'GREETING=hi']));
  assert.match(created.id, /^sbx_/);
  assert.equal(created.status, 'running');
  assert.deepEqual(created.metadata, { purpose: 'cli-test' });
  assert.equal(ok(await user.run(['exec', '--session', created.id, '--', 'sh', '-c', 'echo $GREETING'])), 'hi\n');
});

test('session create --no-wait answers at once with a pending session', async () => {
  const user = await signedUpUser(stack.url);
  const s = json(await user.run(['session', 'create', '--no-wait', '--json']));
  assert.equal(s.status, 'pending');
});

test('session create --timeout gives the session its own end; session timeout moves it, refusing one past the cap', async () => {
  const user = await signedUpUser(stack.url);
  const s = json(await user.run(['session', 'create', '--timeout', '5m', '--no-wait', '--json']));
  assert.equal(Date.parse(s.expiresAt) - Date.parse(s.createdAt), 300_000);
  const moved = await user.run(['session', 'timeout', s.id, '600']);
  const end = ok(moved).trim();
  assert.ok(Date.parse(end) - Date.now() > 590_000, end);
  assert.match(moved.stderr, new RegExp(`${s.id} ends at ${end}`));
  assert.equal(json(await user.run(['session', 'timeout', s.id, '90s', '--json'])).id, s.id);
  failsWith(await user.run(['session', 'timeout', s.id, '24h']), 'timeout_past_cap');
  const bad = await user.run(['session', 'timeout', s.id, '5x']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /duration such as 90s/);
  failsWith(await user.run(['session', 'create', '--timeout', '999999']), 'invalid_request');
  ok(await user.run(['session', 'rm', s.id]));
  failsWith(await user.run(['session', 'timeout', s.id, '60']), 'sandbox_not_running');
});

test('session ls prints a table of id, status, age and time left; --json the list; --all the destroyed too', async () => {
  const user = await signedUpUser(stack.url);
  const a = await newSession(user);
  const b = await newSession(user);
  const table = ok(await user.run(['session', 'ls']));
  const lines = table.trimEnd().split('\n');
  assert.match(lines[0]!, /^ID +STATUS +AGE +TIME LEFT$/);
  assert.equal(lines.length, 3);
  assert.match(lines[1]!, new RegExp(`^${b} +running +\\d+(s|m\\d\\ds) +[0-3]\\d:\\d\\d$`));
  assert.match(lines[2]!, new RegExp(`^${a} +running +`));

  const list = json(await user.run(['session', 'ls', '--json']));
  assert.deepEqual(list.map((s: { id: string }) => s.id), [b, a]);

  ok(await user.run(['session', 'rm', a]));
  assert.deepEqual(json(await user.run(['session', 'ls', '--json'])).map((s: { id: string }) => s.id), [b]);
  const all = ok(await user.run(['session', 'ls', '--all']));
  assert.match(all, new RegExp(`^${a} +terminated +\\S+ +-$`, 'm'));
});

test('session get prints the fields, one a line', async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  const text = ok(await user.run(['session', 'get', id]));
  assert.match(text, new RegExp(`^id: +${id}$`, 'm'));
  assert.match(text, /^status: +running$/m);
  assert.match(text, /^time left: +[0-3]\d:\d\d$/m);
});

test('session rm destroys, prints the id, and is idempotent; --json prints the destroyed sandbox', async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  const r = await user.run(['session', 'rm', id]);
  assert.equal(ok(r), `${id}\n`);
  assert.match(r.stderr, new RegExp(`Destroyed ${id}`));
  const again = json(await user.run(['session', 'rm', '--session', id, '--json']));
  assert.equal(again.state, 'destroyed');
  assert.equal(again.destroyReason, 'user');
});

test('an unknown session shows sandbox_not_found and a hint', async () => {
  const user = await signedUpUser(stack.url);
  const r = await user.run(['session', 'get', 'sbx_doesnotexist000000000000']);
  failsWith(r, 'sandbox_not_found', 1);
  assert.match(r.stderr, /Hint: .*paddock session ls/);
});

test('auto-selection: with no active session, session, exec and files commands ask for one', async () => {
  const user = await signedUpUser(stack.url);
  for (const args of [['session', 'get'], ['session', 'rm'], ['exec', '--', 'true'], ['files', 'ls']]) {
    const r = await user.run(args);
    failsWith(r, 'no_active_session', 1);
    assert.match(r.stderr, /paddock session create/);
  }
});

test('auto-selection: with exactly one active session, every session, exec and files command uses it', async () => {
  const user = await signedUpUser(stack.url);
  const gone = await newSession(user);
  ok(await user.run(['session', 'rm', gone])); // a destroyed session does not count
  const id = await newSession(user);
  assert.equal(json(await user.run(['session', 'get', '--json'])).id, id);
  assert.equal(ok(await user.run(['exec', '--', 'echo', 'picked'])), 'picked\n');
  ok(await user.run(['files', 'create', 'auto.txt', '--content', 'auto']));
  assert.equal(ok(await user.run(['files', 'view', 'auto.txt'])), 'auto');
  assert.deepEqual(json(await user.run(['files', 'ls', '--json'])).entries.map((e: { name: string }) => e.name), ['auto.txt']);
  assert.equal(ok(await user.run(['session', 'rm'])), `${id}\n`);
});

test('auto-selection: with several active sessions, commands ask for --session and list the choices', async () => {
  const user = await signedUpUser(stack.url);
  const a = await newSession(user);
  const b = await newSession(user);
  for (const args of [['session', 'get'], ['session', 'rm'], ['exec', '--', 'true'], ['files', 'view', 'x'], ['files', 'grep', 'x']]) {
    const r = await user.run(args);
    failsWith(r, 'session_required', 2);
    assert.match(r.stderr, /--session <session_id>/);
    assert.match(r.stderr, new RegExp(`^  ${a} +running`, 'm'));
    assert.match(r.stderr, new RegExp(`^  ${b} +running`, 'm'));
  }
  // Both still exist: nothing was destroyed by the refused rm.
  assert.equal(json(await user.run(['session', 'ls', '--json'])).length, 2);
  assert.equal(ok(await user.run(['exec', '--session', b, '--', 'echo', 'chosen'])), 'chosen\n');
});

test('the concurrent quota shows its code and what to do', async () => {
  const user = await signedUpUser(stack.url);
  await Promise.all([newSession(user), newSession(user), newSession(user)]);
  const r = await user.run(['session', 'create']);
  failsWith(r, 'concurrent_sandbox_limit_reached', 1);
  assert.match(r.stderr, /Hint: Destroy a session/);
  const j = await user.run(['session', 'create', '--json']);
  assert.equal(JSON.parse(j.stderr).error.code, 'concurrent_sandbox_limit_reached');
});
