import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DestroyReason, Sandbox } from '../../shared/db/entities.ts';
import type { JobPayload } from '../../shared/jobs/catalogue.ts';
import { PermanentRuntimeError, type RuntimeSandbox } from '../../shared/runtime/types.ts';
import { SandboxLifecycle, type LifecycleStore } from '../../shared/sandboxes/lifecycle.ts';
import type { SandboxRow } from '../../shared/sandboxes/snapshot.ts';
import type { PendingSandbox } from '../../shared/sandboxes/transitions.ts';
import { SNAPSHOT_CORRUPT_MESSAGE, SnapshotRestoreError } from '../../shared/snapshots/restore-error.ts';
import type { FinalSnapshot } from '../../shared/snapshots/snapshots.ts';

// The workers' half of a sandbox's life (shared/sandboxes/lifecycle.ts) against an in-memory
// store and runtime. test/sandboxes/create-job.test.ts and reaper.test.ts hold the same rules
// against PostgreSQL, Redis and a runtime.

const NOW = new Date('2026-11-20T12:00:00.000Z');
const ID = 'sbx_000000000000000000000001';

function sandbox(over: Partial<Sandbox> = {}): Sandbox {
  return {
    id: ID, accountId: 'acc_1', state: 'active', status: 'pending', image: 'base', metadata: {}, env: {},
    createdAt: NOW, readyAt: null, expiresAt: new Date(NOW.getTime() + 3600_000), expiryWarningAt: null,
    deployment: 'unit', destroyedAt: null, destroyReason: null, failureMessage: null, snapshotOnDestroy: false, finalSnapshotId: null, ...over,
  } as Sandbox;
}

function world(row: Sandbox | undefined, options: { create?: () => Promise<void>; restore?: () => Promise<void>; now?: Date; movedTo?: Date; kept?: FinalSnapshot } = {}) {
  const calls: string[] = [];
  let current = row;
  const store: LifecycleStore = {
    find: async () => {
      calls.push('find');
      return current;
    },
    markRunning: async (pending: PendingSandbox) => {
      calls.push(`running ${pending.id}`);
      if (current?.state !== 'active' || current.status !== 'pending') return false;
      current = { ...current, status: 'running', readyAt: NOW };
      return true;
    },
    markTerminating: async (_id, reason: DestroyReason, dueBy?: Date) => {
      calls.push(`terminating ${reason}`);
      // As the conditional update: an expiry applies only to a sandbox due by then (its end may have moved meanwhile).
      return !dueBy || (options.movedTo ?? current!.expiresAt) <= dueBy;
    },
    markDestroyed: async (_id, reason: DestroyReason, end = {}) => {
      calls.push(`destroyed ${reason}${end.failureMessage ? `: ${end.failureMessage}` : ''}${end.finalSnapshotId ? ` with ${end.finalSnapshotId}` : ''}`);
      if (current?.state !== 'active') return undefined;
      current = { ...current, state: 'destroyed' };
      return { destroy_reason: reason } as SandboxRow;
    },
    markExpiring: async () => true,
  };
  const lifecycle = new SandboxLifecycle(
    {
      store,
      runtime: {
        create: async () => {
          calls.push('runtime create');
          await options.create?.();
          return {} as RuntimeSandbox;
        },
        destroy: async () => void calls.push('runtime destroy'),
      },
      clock: { now: () => options.now ?? NOW },
      log: { warn: () => undefined },
      onFailed: () => calls.push('counted failed'),
      workspaces: {
        restore: async (accountId, sandboxId, snapshotId) => {
          calls.push(`restore ${snapshotId} into ${sandboxId} of ${accountId}`);
          await options.restore?.();
        },
        keepFinal: async (accountId, sandboxId) => {
          calls.push(`keep ${sandboxId} of ${accountId}`);
          return options.kept ?? { outcome: 'kept' };
        },
      },
    },
    { PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS: 60 },
  );
  return { lifecycle, calls };
}

const payload = (over: Partial<JobPayload<'create'>> = {}): JobPayload<'create'> => ({
  sandboxId: ID, image: 'base', expiresAt: new Date(NOW.getTime() + 3600_000).toISOString(),
  accountId: 'acc_1', createdAt: NOW.toISOString(), metadata: {}, ...over,
});
const FIRST = { started: 1, failed: 0, allowed: 5 };

test('a fresh job trusts the facts it carries: no read before the runtime creates, then one move to running', async () => {
  const { lifecycle, calls } = world(sandbox());
  assert.equal(await lifecycle.start(payload(), FIRST), 'running');
  assert.deepEqual(calls, ['runtime create', `running ${ID}`]);
});

test('a retried job reads the row first, and makes nothing for a sandbox ended meanwhile', async () => {
  const { lifecycle, calls } = world(sandbox({ status: 'terminating' }));
  assert.equal(await lifecycle.start(payload(), { started: 2, failed: 1, allowed: 5 }), 'skipped');
  assert.deepEqual(calls, ['find', 'runtime destroy']);
});

test('a job picked up past the ready timeout fails its sandbox without creating it', async () => {
  const { lifecycle, calls } = world(sandbox(), { now: new Date(NOW.getTime() + 61_000) });
  assert.equal(await lifecycle.start(payload(), { started: 2, failed: 0, allowed: 5 }), 'failed');
  assert.deepEqual(calls, ['find', 'runtime destroy', 'destroyed failed: The sandbox did not become ready within 60 s.', 'counted failed']);
});

test('a permanent runtime error fails the sandbox at once and is thrown on; a passing one is left to the next try, but not on the last', async () => {
  const permanent = world(sandbox(), { create: () => Promise.reject(new PermanentRuntimeError('no such image')) });
  await assert.rejects(permanent.lifecycle.start(payload(), FIRST), PermanentRuntimeError);
  assert.ok(permanent.calls.includes('destroyed failed: no such image'));
  const passing = world(sandbox(), { create: () => Promise.reject(new Error('busy')) });
  await assert.rejects(passing.lifecycle.start(payload(), FIRST), /busy/);
  assert.ok(!passing.calls.some((c) => c.startsWith('destroyed')));
  const last = world(sandbox(), { create: () => Promise.reject(new Error('busy')) });
  await assert.rejects(last.lifecycle.start(payload(), { started: 5, failed: 4, allowed: 5 }), /busy/);
  assert.ok(last.calls.includes('destroyed failed: busy'));
});

test('a sandbox from a snapshot gets its workspace back before it runs; a damaged snapshot fails it for good, a passing failure is retried', async () => {
  const restored = world(sandbox());
  assert.equal(await restored.lifecycle.start(payload({ snapshotId: 'snap_1' }), FIRST), 'running');
  assert.deepEqual(restored.calls, ['runtime create', `restore snap_1 into ${ID} of acc_1`, `running ${ID}`]);
  const damaged = world(sandbox(), { restore: () => Promise.reject(new SnapshotRestoreError('snapshot_corrupt', `${SNAPSHOT_CORRUPT_MESSAGE}: bad bytes.`)) });
  await assert.rejects(damaged.lifecycle.start(payload({ snapshotId: 'snap_1' }), FIRST), PermanentRuntimeError);
  assert.ok(damaged.calls.includes(`destroyed failed: ${SNAPSHOT_CORRUPT_MESSAGE}: bad bytes.`), damaged.calls.join('; '));
  assert.ok(!damaged.calls.some((c) => c.startsWith('running')));
  const passing = world(sandbox(), { restore: () => Promise.reject(new Error('agent busy')) });
  await assert.rejects(passing.lifecycle.start(payload({ snapshotId: 'snap_1' }), FIRST), /agent busy/);
  assert.ok(!passing.calls.some((c) => c.startsWith('destroyed') || c.startsWith('running')));
});

test('a sandbox destroyed while the runtime created it is undone', async () => {
  const { lifecycle, calls } = world(sandbox({ state: 'destroyed', status: 'terminated' }));
  assert.equal(await lifecycle.start(payload(), FIRST), 'destroyed-meanwhile');
  assert.deepEqual(calls, ['runtime create', `running ${ID}`, 'find', 'runtime destroy']);
});

test("an end asked for by its user reads nothing first; any other marks it terminating, keeping a first reason", async () => {
  const user = world(sandbox({ status: 'terminating', destroyReason: 'user' }));
  assert.ok(await user.lifecycle.end(ID, 'user'));
  assert.deepEqual(user.calls, ['runtime destroy', 'destroyed user']);
  const expired = world(sandbox({ status: 'running', expiresAt: NOW }));
  await expired.lifecycle.end(ID, 'expired');
  assert.deepEqual(expired.calls, ['find', 'terminating expired', 'runtime destroy', 'destroyed expired']);
  const asked = world(sandbox({ status: 'terminating', destroyReason: 'user' }));
  await asked.lifecycle.end(ID, 'expired');
  assert.deepEqual(asked.calls, ['find', 'runtime destroy', 'destroyed expired']);
  assert.equal(await world(undefined).lifecycle.end(ID, 'expired'), 'unknown');
});

test('an expiry ends only a sandbox whose end is due: one moved later (before the read, or between it and the mark) is left running', async () => {
  const later = world(sandbox({ status: 'running', expiresAt: new Date(NOW.getTime() + 5000) }));
  assert.equal(await later.lifecycle.end(ID, 'expired'), 'not-due');
  assert.deepEqual(later.calls, ['find']);
  // Within the second's leeway for a clock a little ahead, it is due.
  const almost = world(sandbox({ status: 'running', expiresAt: new Date(NOW.getTime() + 500) }));
  assert.ok(await almost.lifecycle.end(ID, 'expired'));
  const racing = world(sandbox({ status: 'running', expiresAt: NOW }), { movedTo: new Date(NOW.getTime() + 60_000) });
  assert.equal(await racing.lifecycle.end(ID, 'expired'), 'not-due');
  assert.deepEqual(racing.calls, ['find', 'terminating expired']);
  // A failed start is no expiry: it is not checked against the end.
  const failed = world(sandbox({ status: 'running' }));
  assert.ok(await failed.lifecycle.end(ID, 'failed'));
});

test('snapshotOnDestroy: the workspace is kept before the runtime destroys it, at the cap or on a DELETE (whose job says so), by one ender, and never for a failed start', async () => {
  const kept = (snapshotId: string) => ({ kept: { outcome: 'kept' as const, snapshotId } });
  const expired = world(sandbox({ status: 'running', expiresAt: NOW, snapshotOnDestroy: true }), kept('snap_1'));
  await expired.lifecycle.end(ID, 'expired');
  assert.deepEqual(expired.calls, ['find', 'terminating expired', `keep ${ID} of acc_1`, 'runtime destroy', 'destroyed expired with snap_1']);
  const user = world(sandbox({ status: 'terminating', destroyReason: 'user', snapshotOnDestroy: true }), kept('snap_2'));
  await user.lifecycle.end(ID, 'user', { final: true });
  assert.deepEqual(user.calls, ['find', `keep ${ID} of acc_1`, 'runtime destroy', 'destroyed user with snap_2']);
  // A failed copy: the sandbox is destroyed all the same, naming none.
  const failedCopy = world(sandbox({ status: 'terminating', destroyReason: 'user', snapshotOnDestroy: true }));
  await failedCopy.lifecycle.end(ID, 'user', { final: true });
  assert.deepEqual(failedCopy.calls, ['find', `keep ${ID} of acc_1`, 'runtime destroy', 'destroyed user']);
  // Another ender copies it (the sweep, while the DELETE's job runs): the sandbox is that one's to destroy.
  const second = world(sandbox({ status: 'terminating', destroyReason: 'user', snapshotOnDestroy: true, finalSnapshotId: 'snap_3' }), { kept: { outcome: 'elsewhere' } });
  assert.equal(await second.lifecycle.end(ID, 'user', { final: true }), 'elsewhere');
  assert.deepEqual(second.calls, ['find', `keep ${ID} of acc_1`]);
  const failedStart = world(sandbox({ status: 'running', snapshotOnDestroy: true }), kept('snap_5'));
  await failedStart.lifecycle.end(ID, 'failed');
  assert.deepEqual(failedStart.calls, ['find', 'terminating failed', 'runtime destroy', 'destroyed failed']);
});
