import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NetworkPolicy } from '../../shared/network/policy.ts';
import type { DestroyReason, Sandbox } from '../../shared/db/entities.ts';
import { ApiError } from '../../shared/errors.ts';
import type { Announcer } from '../../shared/events/announce.ts';
import type { SandboxTransition } from '../../shared/events/ring.ts';
import type { JobRequest } from '../../shared/jobs/catalogue.ts';
import type { IdempotencyRecord } from '../../shared/repositories/idempotency.ts';
import { SandboxGoneError } from '../../shared/runtime/types.ts';
import { SandboxEngine } from '../../shared/sandboxes/engine.ts';
import type { MovedEnd } from '../../shared/repositories/sandboxes.ts';
import type { CreateDecision, CreateFacts, CreateRequest, CreateResult, SandboxEngineOptions, SandboxStore } from '../../shared/sandboxes/ports.ts';
import { presentSandbox } from '../../shared/sandboxes/present.ts';
import { inSandboxError, requireRunning } from '../../shared/sandboxes/running.ts';

// The sandbox engine's rules (shared/sandboxes/engine.ts) against in-memory ports: fast, and no
// database. The suites beside this one (create-job, lifecycle, quotas…) hold the same rules
// against PostgreSQL, Redis and a runtime, through HTTP.

const OPTIONS: SandboxEngineOptions = {
  PADDOCK_SESSION_CAP_SECONDS: 3600,
  PADDOCK_EXPIRY_WARNING_SECONDS: 300,
  PADDOCK_SANDBOX_READY_TIMEOUT_SECONDS: 1,
  PADDOCK_QUOTA_CONCURRENT_SANDBOXES: 2,
  PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS: 10,
  PADDOCK_WARM_POOL_SIZE: 0,
  PADDOCK_WARM_POOL_IMAGES: '',
  PADDOCK_REDIS_PREFIX: 'unit',
  PADDOCK_EGRESS_MAX: 'allow',
  PADDOCK_LOCAL_NETWORK: false,
};

const NOW = new Date('2026-11-20T12:00:00.000Z');

class MemoryStore implements SandboxStore {
  sandboxes = new Map<string, Sandbox>();
  keys = new Map<string, IdempotencyRecord>();
  hoursUsed = 0;
  accountGone = false;
  allowlist: string[] = [];
  log: string[] = [];

  async allowlistCommands(): Promise<string[]> {
    return this.allowlist;
  }

  async create(request: CreateRequest, decide: (facts: CreateFacts) => CreateDecision): Promise<CreateResult> {
    const active = [...this.sandboxes.values()].filter((s) => s.accountId === request.accountId && s.state === 'active').length;
    const decision = decide({
      overrides: this.accountGone ? undefined : { concurrentSandboxesLimit: null, monthlySandboxHoursLimit: null },
      usage: { active, hours: this.hoursUsed },
      claimed: undefined,
      replay: request.idempotencyKey ? this.keys.get(`${request.accountId}/${request.idempotencyKey}`) : undefined,
    });
    if ('replay' in decision) return decision;
    this.sandboxes.set(decision.sandbox.id, structuredClone(decision.sandbox));
    if (decision.idempotency) {
      const { key, requestHash } = decision.idempotency;
      this.keys.set(`${request.accountId}/${key}`, { requestHash, sandboxId: decision.sandbox.id, completedAt: null, createdAt: NOW });
    }
    this.log.push(`commit ${decision.events.map((e) => e.type).join(',')}`);
    return { sandbox: decision.sandbox, created: [] };
  }

  async completeIdempotencyKey(accountId: string, key: string): Promise<void> {
    const record = this.keys.get(`${accountId}/${key}`);
    if (record) record.completedAt ??= NOW;
  }

  async findOwn(accountId: string, id: string): Promise<Sandbox | undefined> {
    const s = this.sandboxes.get(id);
    return s?.accountId === accountId ? structuredClone(s) : undefined;
  }

  async markTerminatingByItsUser(accountId: string, id: string): Promise<Sandbox | undefined> {
    const s = this.sandboxes.get(id);
    if (s?.accountId !== accountId || s.state !== 'active' || s.status === 'terminating') return undefined;
    Object.assign(s, { status: 'terminating', destroyReason: 'user' });
    return structuredClone(s);
  }

  async moveEnd(accountId: string, id: string, end: { expiresAt: Date; expiryWarningAt: Date | null }): Promise<MovedEnd | undefined> {
    const s = this.sandboxes.get(id);
    if (s?.accountId !== accountId || s.state !== 'active' || s.status === 'terminating') return undefined;
    const previous = { expiresAt: s.expiresAt, expiryWarningAt: s.expiryWarningAt ?? null };
    Object.assign(s, end);
    return { sandbox: structuredClone(s), previous };
  }

  async setNetwork(accountId: string, id: string, policy: NetworkPolicy, apply: () => Promise<void>): Promise<Sandbox | 'not_running' | undefined> {
    const s = this.sandboxes.get(id);
    if (s?.accountId !== accountId) return undefined;
    if (s.state !== 'active' || s.status !== 'running') return 'not_running';
    await apply();
    this.log.push(`network ${JSON.stringify(policy)}`);
    s.network = policy;
    return structuredClone(s);
  }

  async markDestroyed(id: string, reason: DestroyReason, failureMessage?: string): Promise<boolean> {
    const s = this.sandboxes.get(id);
    if (s?.state !== 'active') return false;
    Object.assign(s, { state: 'destroyed', status: reason === 'failed' ? 'failed' : 'terminated', destroyReason: reason, failureMessage: failureMessage ?? null, destroyedAt: NOW });
    return true;
  }
}

function engineWith(overrides: { queueFails?: boolean; heard?: SandboxTransition } = {}) {
  const store = new MemoryStore();
  const jobs: JobRequest[] = [];
  const announced: string[] = [];
  const announcer: Announcer = {
    announce: async () => void announced.push('announce'),
    changed: async (ids) => void announced.push(`changed ${[...ids].join(',')}`),
  };
  const engine = new SandboxEngine(
    {
      store,
      queue: {
        add: async (added) => {
          if (overrides.queueFails) throw new Error('redis away');
          store.log.push(`queued ${added.map((j) => j.name).join(',')}`);
          jobs.push(...added);
        },
      },
      announcer,
      runtime: {
        name: 'kubernetes',
        egressByName: false,
        defaultImage: 'base',
        resolveImage: (image) => image ?? 'base',
        setNetwork: async (id, policy) => void store.log.push(`runtime ${id} ${JSON.stringify(policy)}`),
      },
      watcher: {
        watch: () => ({ heard: () => overrides.heard, jobFinished: () => false, next: async () => undefined, release: () => undefined }),
      },
      clock: { now: () => NOW },
      log: { warn: () => undefined },
      snapshots: {
        source: async (_accountId, snapshotId) => {
          if (snapshotId !== 'snap_ready') throw new ApiError('snapshot_not_found', `No snapshot ${snapshotId}.`);
          return { id: snapshotId, image: 'from-snapshot' };
        },
      },
    },
    OPTIONS,
  );
  return { engine, store, jobs, announced };
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const err = await promise.then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError, String(err));
  return err;
}

test('a create records a pending sandbox, then queues its create, expiry and warning jobs once it has committed', async () => {
  const { engine, store, jobs } = engineWith();
  const { sandbox, replayed } = await engine.create('acc_1', { metadata: { a: 'b' } }, { wait: false });
  assert.equal(replayed, false);
  assert.equal(sandbox.status, 'pending');
  assert.equal(sandbox.expiresAt.getTime() - NOW.getTime(), 3600_000);
  assert.equal(sandbox.expiryWarningAt?.getTime(), sandbox.expiresAt.getTime() - 300_000);
  assert.deepEqual(store.log, ['commit sandbox.created', 'queued create,expire,expiring']);
  assert.deepEqual(jobs.map((j) => [j.name, j.delayMs]), [['create', undefined], ['expire', 3600_000], ['expiring', 3300_000]]);
});

test("a create from a snapshot: its image unless one is named, the snapshot in its create job; another's or an unknown one refused before anything is recorded", async () => {
  const { engine, store, jobs } = engineWith();
  const { sandbox } = await engine.create('acc_1', { snapshot: 'snap_ready' }, { wait: false });
  assert.equal(sandbox.image, 'from-snapshot');
  assert.deepEqual(jobs[0], { name: 'create', payload: { snapshotId: 'snap_ready', sandboxId: sandbox.id, image: 'from-snapshot', expiresAt: sandbox.expiresAt.toISOString(), accountId: 'acc_1', createdAt: NOW.toISOString(), metadata: {} } });
  const named = await engine.create('acc_1', { snapshot: 'snap_ready', image: 'other' }, { wait: false });
  assert.equal(named.sandbox.image, 'other');
  const before = store.sandboxes.size;
  await assert.rejects(engine.create('acc_1', { snapshot: 'snap_elses' }, { wait: false }), (err: unknown) => err instanceof ApiError && err.code === 'snapshot_not_found');
  assert.equal(store.sandboxes.size, before);
});

test("a timeout of its own: the create's end and its create job's cap; a move queues jobs named for the new moments", async () => {
  const { engine, jobs } = engineWith();
  const { sandbox } = await engine.create('acc_1', { timeoutSeconds: 600 }, { wait: false });
  assert.equal(sandbox.expiresAt.getTime() - NOW.getTime(), 600_000);
  const create = jobs.find((j) => j.name === 'create')!;
  assert.equal((create.payload as { capAt?: string }).capAt, new Date(NOW.getTime() + 3600_000).toISOString());
  assert.deepEqual(jobs.slice(1).map((j) => [j.name, j.delayMs]), [['expire', 600_000], ['expiring', 300_000]]);
  const past = await refusal(engine.create('acc_1', { timeoutSeconds: 3601 }, { wait: false }));
  assert.equal(past.code, 'invalid_request');

  jobs.length = 0;
  const moved = await engine.setTimeout('acc_1', sandbox.id, 1200);
  assert.equal(moved.expiresAt.getTime() - NOW.getTime(), 1200_000);
  assert.deepEqual(
    jobs.map((j) => [j.name, j.payload, j.delayMs]),
    [
      ['expire', { sandboxId: sandbox.id, at: NOW.getTime() + 1200_000 }, 1200_000],
      ['expiring', { sandboxId: sandbox.id, at: NOW.getTime() + 900_000 }, 900_000],
    ],
  );
  const refused = await refusal(engine.setTimeout('acc_1', sandbox.id, 3601));
  assert.equal(refused.code, 'timeout_past_cap');
  assert.deepEqual(refused.extra, { expiresAt: new Date(NOW.getTime() + 3600_000).toISOString() });
  assert.equal((await refusal(engine.setTimeout('acc_2', sandbox.id, 60))).code, 'sandbox_not_found');
  await engine.destroy('acc_1', sandbox.id, { wait: false });
  assert.equal((await refusal(engine.setTimeout('acc_1', sandbox.id, 60))).code, 'sandbox_not_running');
});

test('the concurrent cap refuses first, then the month\'s hours; a refusal queues nothing', async () => {
  const { engine, store, jobs } = engineWith();
  await engine.create('acc_1', {}, { wait: false });
  await engine.create('acc_1', {}, { wait: false });
  const full = await refusal(engine.create('acc_1', {}, { wait: false }));
  assert.equal(full.code, 'concurrent_sandbox_limit_reached');
  assert.deepEqual(full.extra, { active: 2, limit: 2 });
  store.hoursUsed = 10;
  const spent = await refusal(engine.create('acc_2', {}, { wait: false }));
  assert.equal(spent.code, 'monthly_usage_limit_reached');
  assert.equal(jobs.filter((j) => j.name === 'create').length, 2);
});

test('an Idempotency-Key answers the first sandbox again, refuses another body, and a retry while the first is in progress', async () => {
  const { engine, store } = engineWith();
  const first = await engine.create('acc_1', { metadata: { n: '1' } }, { idempotencyKey: 'k', wait: false });
  const again = await engine.create('acc_1', { metadata: { n: '1' } }, { idempotencyKey: 'k', wait: false });
  assert.equal(again.replayed, true);
  assert.equal(again.sandbox.id, first.sandbox.id);
  assert.equal((await refusal(engine.create('acc_1', { metadata: { n: '2' } }, { idempotencyKey: 'k', wait: false }))).code, 'idempotency_key_reused');
  store.keys.get('acc_1/k')!.completedAt = null;
  const busy = await refusal(engine.create('acc_1', { metadata: { n: '1' } }, { idempotencyKey: 'k', wait: false }));
  assert.equal(busy.code, 'idempotency_conflict');
  assert.equal(busy.headers['Retry-After'], '1');
});

test('a create whose jobs cannot be queued fails its sandbox at once, freeing its quota, and says so', async () => {
  const { engine, store } = engineWith({ queueFails: true });
  await assert.rejects(engine.create('acc_1', {}, { wait: false }), /redis away/);
  const [s] = store.sandboxes.values();
  assert.equal(s?.state, 'destroyed');
  assert.equal(s?.status, 'failed');
  assert.equal(s?.failureMessage, 'The sandbox could not be scheduled.');
});

test('a create-time env may not set what decides which code runs while an allowlist is in force', async () => {
  const { engine, store } = engineWith();
  store.allowlist = ['ls'];
  const refused = await refusal(engine.create('acc_1', { env: { LD_PRELOAD: '/x.so' } }, { wait: false }));
  assert.equal(refused.code, 'command_not_allowed');
  assert.equal(store.sandboxes.size, 0);
});

test('a gone account is refused as an invalid credential', async () => {
  const { engine, store } = engineWith();
  store.accountGone = true;
  assert.equal((await refusal(engine.create('acc_1', {}, { wait: false }))).code, 'invalid_credential');
});

test('a wait answers the transition it heard, with no further read', async () => {
  const heard: SandboxTransition = { id: '', state: 'active', status: 'running', readyAt: NOW.toISOString(), destroyedAt: null, destroyReason: null, failureMessage: null, finalSnapshotId: null };
  const { engine, store } = engineWith({ heard });
  store.findOwn = async () => assert.fail('no read once the transition is heard');
  const { sandbox } = await engine.create('acc_1', {}, { wait: true });
  assert.equal(sandbox.status, 'running');
  assert.equal(sandbox.readyAt?.toISOString(), NOW.toISOString());
});

test('a destroy marks the sandbox terminating and queues its job; asked again, its job goes again; another account\'s is 404', async () => {
  const { engine, jobs, announced } = engineWith();
  const { sandbox } = await engine.create('acc_1', {}, { wait: false });
  const terminating = await engine.destroy('acc_1', sandbox.id, { wait: false });
  assert.equal(terminating.status, 'terminating');
  assert.ok(announced.includes('changed acc_1'));
  const again = await engine.destroy('acc_1', sandbox.id, { wait: false });
  assert.equal(again.status, 'terminating');
  assert.equal(jobs.filter((j) => j.name === 'destroy').length, 2);
  assert.equal((await refusal(engine.destroy('acc_2', sandbox.id, { wait: false }))).code, 'sandbox_not_found');
  assert.equal((await refusal(engine.destroy('acc_1', 'not-an-id\u0000', { wait: false }))).code, 'sandbox_not_found');
});

test('everything done inside a sandbox needs it running: 409 sandbox_not_running, worded for the use', async () => {
  const { engine } = engineWith();
  const { sandbox } = await engine.create('acc_1', {}, { wait: false });
  const files = await refusal(engine.running('acc_1', sandbox.id, 'files'));
  assert.equal(files.code, 'sandbox_not_running');
  assert.equal(files.message, `Sandbox ${sandbox.id} is pending; files can be used only while it runs.`);
  assert.deepEqual(files.extra, { status: 'pending' });
  assert.throws(() => requireRunning(sandbox, 'exec'), (e: ApiError) => e.message.endsWith('commands run only while it is running.') && Object.keys(e.extra).length === 0);
  assert.doesNotThrow(() => requireRunning({ ...sandbox, status: 'running' }, 'terminal'));
  const gone = inSandboxError(new SandboxGoneError('ended'), sandbox.id, 'processes');
  assert.ok(gone instanceof ApiError && gone.code === 'sandbox_not_running' && gone.message === `Sandbox ${sandbox.id} is no longer running.`);
  const other = new Error('other');
  assert.equal(inSandboxError(other, sandbox.id, 'exec'), other);
});

test('one presenter: a row read as text and a sandbox held as dates show the same', () => {
  const held = { id: 'sbx_x', state: 'active', status: 'running', image: 'base', metadata: {}, createdAt: NOW, readyAt: NOW, expiresAt: NOW, destroyedAt: null } as const;
  const read = { ...held, createdAt: NOW.toISOString(), readyAt: NOW.toISOString(), expiresAt: NOW.toISOString() };
  assert.deepEqual(presentSandbox(read), presentSandbox(held));
  assert.deepEqual(Object.keys(presentSandbox(held)), ['id', 'state', 'status', 'image', 'createdAt', 'readyAt', 'expiresAt', 'destroyedAt', 'destroyReason', 'failureMessage', 'snapshotOnDestroy', 'finalSnapshotId', 'network', 'networkRefused', 'metadata']);
});

test("a sandbox's network: the default without the scope; another needs network:write and stays within PADDOCK_EGRESS_MAX; a change reaches the runtime before the row", async () => {
  const { engine, store, jobs } = engineWith();
  const plain = await engine.create('acc_1', {}, { wait: false });
  assert.deepEqual(plain.sandbox.network, { egress: 'none' });
  assert.equal((jobs[0]!.payload as { network?: unknown }).network, undefined, 'none goes without a word');
  // Naming the default needs no scope; anything else does.
  assert.deepEqual((await engine.create('acc_1', { network: { egress: 'none' } }, { wait: false })).sandbox.network, { egress: 'none' });
  const allow: NetworkPolicy = { egress: { allow: ['198.51.100.0/24:443'] } };
  const scopeless = await refusal(engine.create('acc_2', { network: allow }, { wait: false }));
  assert.deepEqual([scopeless.code, scopeless.extra?.scope], ['insufficient_scope', 'network:write']);
  const over = await refusal(engine.create('acc_2', { network: { egress: 'all' } }, { wait: false, network: { mayOpen: true } }));
  assert.deepEqual([over.code, over.extra?.max], ['egress_not_permitted', 'allow']);
  assert.equal([...store.sandboxes.values()].filter((s) => s.accountId === 'acc_2').length, 0, 'a refusal records nothing');
  jobs.length = 0;
  const opened = await engine.create('acc_2', { network: allow }, { wait: false, network: { mayOpen: true } });
  assert.deepEqual(opened.sandbox.network, allow);
  assert.deepEqual((jobs[0]!.payload as { network?: unknown }).network, allow);

  const id = opened.sandbox.id;
  await assert.rejects(engine.setNetwork('acc_2', id, { egress: 'none' }, { mayOpen: true }), (err: unknown) => err instanceof ApiError && err.code === 'sandbox_not_running');
  store.sandboxes.get(id)!.status = 'running';
  store.log.length = 0;
  const changed = await engine.setNetwork('acc_2', id, { egress: 'none' }, { mayOpen: false });
  assert.deepEqual(changed.network, { egress: 'none' });
  assert.deepEqual(store.log, [`runtime ${id} {"egress":"none"}`, 'network {"egress":"none"}']);
  assert.equal((await refusal(engine.setNetwork('acc_2', id, allow, { mayOpen: false }))).code, 'insufficient_scope');
  assert.equal((await refusal(engine.setNetwork('acc_1', id, { egress: 'none' }, { mayOpen: true }))).code, 'sandbox_not_found');
});
