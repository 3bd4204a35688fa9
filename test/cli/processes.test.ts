import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { eventually } from '../helpers/eventually.ts';
import { failsWith, json, newSession, ok, signedUpUser } from './cli-helpers.ts';

// `paddock exec --background`, `ps`, `logs [-f]` and `kill`, through the installed CLI against a
// real stack (both runtimes).

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });

test('exec --background prints the id at once; ps lists it; logs prints its output; kill ends it', async () => {
  const user = await signedUpUser(stack.url);
  await newSession(user);
  const t0 = Date.now();
  const started = await user.run(['exec', '--background', '--', 'echo hello; echo warn >&2; sleep 60']);
  const id = ok(started).trim();
  assert.match(id, /^proc_[0-9a-z]{24}$/);
  assert.match(started.stderr, /paddock logs -f proc_/);
  assert.ok(Date.now() - t0 < 30_000);

  const table = ok(await user.run(['ps']));
  assert.match(table, /^ID\s+STATUS\s+EXIT\s+AGE\s+COMMAND$/m);
  assert.match(table, new RegExp(`^${id}\\s+running\\s+-\\s+\\S+\\s+echo hello; echo warn >&2; sleep 60$`, 'm'));
  const listed = json(await user.run(['ps', '--json']));
  assert.equal(listed.find((p: any) => p.id === id).status, 'running');

  const logs = await eventually('logs', 10_000, async () => {
    const r = await user.run(['logs', id]);
    return r.stdout === 'hello\n' ? r : undefined;
  });
  assert.equal(logs.code, 0);
  assert.match(logs.stderr, /^warn$/m);

  const killed = await user.run(['kill', '--signal', 'KILL', id]);
  ok(killed);
  assert.match(killed.stderr, /Sent SIGKILL/);
  const after = json(await user.run(['ps', '--json'])).find((p: any) => p.id === id);
  assert.equal(after.status, 'exited');
  assert.equal(after.signal, 'SIGKILL');
  assert.match(ok(await user.run(['ps'])), new RegExp(`^${id}\\s+exited\\s+SIGKILL`, 'm'));
  assert.match((await user.run(['logs', id])).stderr, /has ended \(SIGKILL\)/);
});

test('logs -f follows until the process ends; --json start; bad input is refused', async () => {
  const user = await signedUpUser(stack.url, 'cliproc');
  const session = await newSession(user);
  const started = json(await user.run(['exec', '--background', '--json', '--session', session, '--', 'sh', '-c', 'for i in 1 2 3; do echo "tick $i"; sleep 0.3; done; exit 3']));
  assert.deepEqual(Object.keys(started).sort(), ['command', 'id', 'startedAt']);
  const followed = await user.run(['logs', '-f', '--session', session, started.id]);
  assert.equal(followed.code, 0);
  assert.equal(followed.stdout, 'tick 1\ntick 2\ntick 3\n');
  assert.match(followed.stderr, /has ended \(exit code 3\)/);

  failsWith(await user.run(['kill', `proc_${'0'.repeat(24)}`]), 'process_not_found');
  failsWith(await user.run(['logs', 'proc_../../etc']), 'process_not_found');
  const badSignal = await user.run(['kill', '--signal', 'HUP', started.id]);
  assert.notEqual(badSignal.code, 0);
  assert.match(badSignal.stderr, /TERM or KILL/);
  const withTimeout = await user.run(['exec', '--background', '--timeout', '5', '--', 'sleep 1']);
  assert.notEqual(withTimeout.code, 0);
  assert.match(withTimeout.stderr, /--timeout does not go with --background/);
});
