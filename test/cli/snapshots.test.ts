import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { failsWith, json, newSession, ok, signedUpUser } from './cli-helpers.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/snapshots)

// `paddock snapshot create|ls|rm` and `session create --from-snapshot`, through the installed CLI
// against a real stack.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '4' } });

test('snapshot create prints its id; a session from it has the workspace; ls lists it; whoami shows the storage; rm deletes it', async () => {
  const user = await signedUpUser(stack.url);
  const first = await newSession(user);
  ok(await user.run(['exec', '--session', first, '--', 'echo kept > /workspace/kept.txt']));
  const created = await user.run(['snapshot', 'create', '--session', first, '--name', 'cli']);
  const id = ok(created).trim();
  assert.match(id, /^snap_[0-9a-z]{24}$/);
  assert.match(created.stderr, new RegExp(`paddock session create --from-snapshot ${id}`));

  const table = ok(await user.run(['snapshot', 'ls']));
  assert.match(table, /^ID\s+NAME\s+STATUS\s+SIZE\s+FROM\s+CREATED\s+EXPIRES$/m);
  assert.match(table, new RegExp(`^${id}\\s+cli\\s+ready\\s+\\d+ B\\s+${first}\\s`, 'm'));
  const listed = json(await user.run(['snapshot', 'ls', '--json']));
  assert.equal(listed.find((s: any) => s.id === id).status, 'ready');
  assert.match(ok(await user.run(['whoami'])), /^Snapshots: \d+ B of 5120\.0 MiB stored$/m);

  const second = ok(await user.run(['session', 'create', '--from-snapshot', id])).trim();
  assert.notEqual(second, first);
  assert.equal(ok(await user.run(['exec', '--session', second, '--', 'cat /workspace/kept.txt'])), 'kept\n');

  ok(await user.run(['snapshot', 'rm', id]));
  assert.deepEqual(json(await user.run(['snapshot', 'ls', '--json'])), []);
  failsWith(await user.run(['snapshot', 'rm', id]), 'snapshot_not_found');
  failsWith(await user.run(['session', 'create', '--from-snapshot', id]), 'snapshot_not_found');
});
