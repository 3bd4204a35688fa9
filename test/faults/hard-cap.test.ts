import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startReplicas } from '../helpers/replicas.ts';
import { newAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';
import { testRuntime } from '../helpers/sandbox-stack.ts';
import { assertEndsAtItsCap, localLeftovers, processesOf, sandboxUid, sandboxWithWork } from './hard-cap.ts';

// The session cap holds with no Paddock process alive (a crash, a deploy gone wrong): web and
// worker are SIGKILLed right after a create, and the sandbox's processes still end at expiresAt
// plus the grace, by the sandbox's own init on the local runtime, by the pod's
// activeDeadlineSeconds on Kubernetes. A worker started again then destroys the expired sandbox
// and leaves nothing of it on the host.

// Long enough for a create and an exec on a loaded host (a Kubernetes create there took over six seconds).
const CAP_SECONDS = 15;
const GRACE_SECONDS = 2;
const asRoot = process.getuid?.() === 0;

const replicas = await startReplicas({
  webs: 1,
  workers: 1,
  overrides: {
    PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
    PADDOCK_LOCAL_DEADLINE_GRACE_SECONDS: String(GRACE_SECONDS),
    PADDOCK_KUBE_DEADLINE_GRACE_SECONDS: String(GRACE_SECONDS),
    PADDOCK_EXPIRY_WARNING_SECONDS: '0',
    PADDOCK_REAPER_SWEEP_SECONDS: '1',
  },
});

test('with web and worker killed, a sandbox ends at its cap plus the grace; a worker that comes back cleans up', { skip: !asRoot && 'tells sandboxes apart by their host uids, which needs root' }, async () => {
  const account = await newAccount(replicas.url, 'hardcap');
  const { id, expiresAt } = await sandboxWithWork(replicas.url, account);
  const uid = await sandboxUid(replicas, id);

  assert.equal((await replicas.kill('web', 0, 'SIGKILL')).signal, 'SIGKILL');
  assert.equal((await replicas.kill('worker', 0, 'SIGKILL')).signal, 'SIGKILL');
  await assertEndsAtItsCap(uid, expiresAt, GRACE_SECONDS);

  // Nothing of Paddock has seen it end: the row is still active.
  const row = async () => (await replicas.db.query<{ state: string; destroy_reason: string | null }>('select state, destroy_reason from sandboxes where id = $1', [id])).rows[0];
  assert.equal((await row())?.state, 'active');

  await replicas.restart('worker', 0);
  const destroyed = await eventually('the worker destroys the expired sandbox', 30_000, async () => {
    const r = await row();
    return r?.state === 'destroyed' ? r : undefined;
  });
  assert.equal(destroyed.destroy_reason, 'expired');
  assert.equal(await replicas.runtime.get(id), undefined, 'the runtime holds it no more');
  if (testRuntime() === 'local') {
    await eventually('nothing of it is left on the host', 10_000, async () => (localLeftovers(replicas.config.PADDOCK_DATA_DIR, id).length === 0 ? true : undefined));
  }
  assert.deepEqual(processesOf(uid), []);
});
