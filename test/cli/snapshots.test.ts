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
  const mine = listed.find((s: any) => s.id === id);
  assert.deepEqual([mine.status, mine.name, mine.sandboxId], ['ready', 'cli', first]);
  // whoami: the bytes stored (this one snapshot's, a small workspace's: bytes) of the 5 GiB default.
  assert.match(ok(await user.run(['whoami'])), new RegExp(`^Snapshots: ${mine.sizeBytes} B of 5\\.0 GiB stored$`, 'm'));
  assert.deepEqual(json(await user.run(['whoami', '--json'])).usage.snapshotStorage, { usedBytes: mine.sizeBytes, limitBytes: 5 * 1024 ** 3 });

  const second = ok(await user.run(['session', 'create', '--from-snapshot', id])).trim();
  assert.notEqual(second, first);
  assert.equal(ok(await user.run(['exec', '--session', second, '--', 'cat /workspace/kept.txt'])), 'kept\n');

  const removed = await user.run(['snapshot', 'rm', id]);
  assert.equal(ok(removed), '');
  assert.match(removed.stderr, new RegExp(`^Deleted snapshot ${id}\\.$`, 'm'));
  assert.deepEqual(json(await user.run(['snapshot', 'ls', '--json'])), []);
  const none = await user.run(['snapshot', 'ls']);
  assert.equal(ok(none), '');
  assert.match(none.stderr, /No snapshots\./);
  assert.match(ok(await user.run(['whoami'])), /^Snapshots: 0 B of 5\.0 GiB stored$/m);
  // The session made from it keeps its workspace.
  assert.equal(ok(await user.run(['exec', '--session', second, '--', 'cat /workspace/kept.txt'])), 'kept\n');
  failsWith(await user.run(['snapshot', 'rm', id]), 'snapshot_not_found');
  failsWith(await user.run(['session', 'create', '--from-snapshot', id]), 'snapshot_not_found');
});

test('snapshot create names its session as the argument or --session, answers at once with --no-wait; two sessions and none named is a usage error', async () => {
  const user = await signedUpUser(stack.url, 'clisnap2');
  const first = await newSession(user);
  ok(await user.run(['exec', '--session', first, '--', 'mkdir -p /workspace/app && echo one > /workspace/app/a.txt']));
  // The one active session when none is named; the argument, or --session, once there are two.
  const implied = ok(await user.run(['snapshot', 'create'])).trim();
  const second = await newSession(user);
  const ambiguous = await user.run(['snapshot', 'create']);
  failsWith(ambiguous, 'session_required', 2);
  assert.match(ambiguous.stderr, /--session <session_id>/);
  const named = json(await user.run(['snapshot', 'create', first, '--name', 'arg', '--json']));
  assert.deepEqual([named.sandboxId, named.name, named.status], [first, 'arg', 'ready']);
  const pending = json(await user.run(['snapshot', 'create', '--session', second, '--no-wait', '--json']));
  assert.deepEqual([pending.sandboxId, pending.status], [second, 'pending']);
  const both = await user.run(['snapshot', 'create', first, '--session', second]);
  assert.equal(both.code, 2, both.stderr);
  assert.match(both.stderr, /Give the session once/);
  assert.equal(both.stdout, '');

  // A pending one says how to see it ready; `ls --json` shows each with its session, newest first.
  const quiet = await user.run(['snapshot', 'create', second, '--no-wait']);
  const quietId = ok(quiet).trim();
  assert.match(quiet.stderr, /is being copied: `paddock snapshot ls`/);
  const listed = json(await user.run(['snapshot', 'ls', '--json'])) as { id: string; sandboxId: string }[];
  assert.deepEqual(
    listed.map((s) => [s.id, s.sandboxId]),
    [
      [quietId, second],
      [pending.id, second],
      [named.id, first],
      [implied, first],
    ],
  );
  const fromImplied = ok(await user.run(['session', 'create', '--from-snapshot', implied])).trim();
  assert.equal(ok(await user.run(['exec', '--session', fromImplied, '--', 'cat /workspace/app/a.txt'])), 'one\n');

  // A session that has ended has no workspace to copy.
  ok(await user.run(['session', 'rm', first, '--yes']));
  failsWith(await user.run(['snapshot', 'create', first]), 'sandbox_not_running');
});

test('session create --snapshot-on-destroy: the session ends into a snapshot that session get names and a new session starts from', async () => {
  const user = await signedUpUser(stack.url, 'clisnap3');
  const id = ok(await user.run(['session', 'create', '--snapshot-on-destroy'])).trim();
  assert.match(ok(await user.run(['session', 'get', id])), /^final snapshot: taken when it ends$/m);
  ok(await user.run(['exec', '--session', id, '--', 'echo last > /workspace/last.txt']));
  ok(await user.run(['session', 'rm', id]));
  const ended = json(await user.run(['session', 'get', id, '--json']));
  assert.match(ended.finalSnapshotId, /^snap_/, JSON.stringify(ended));
  assert.match(ok(await user.run(['session', 'get', id])), new RegExp(`^final snapshot: ${ended.finalSnapshotId}$`, 'm'));
  const next = ok(await user.run(['session', 'create', '--from-snapshot', ended.finalSnapshotId])).trim();
  assert.equal(ok(await user.run(['exec', '--session', next, '--', 'cat /workspace/last.txt'])), 'last\n');
});
