import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startReplicas, type Replicas } from '../helpers/replicas.ts';
import { newAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';
import { testRuntime } from '../helpers/sandbox-stack.ts';
import { deploymentOf } from '../../shared/deployment.ts';
import { assertEndsAtItsCap, localLeftovers, processesOf, sandboxUid, sandboxWithWork } from './hard-cap.ts';

// The local sandbox's own end follows its expiresAt when that moves: a sandbox made for the warm
// pool ends by itself only after the longest wait in the pool and a whole session
// (PADDOCK_WARM_POOL_MAX_AGE_SECONDS + the cap), and its claim starts its session now. With web and
// worker SIGKILLed right after the claim (the worker in the middle of refilling the pool), it
// still ends at the claim's expiresAt plus the grace, a minute before the deadline it was made
// with. (A pod's activeDeadlineSeconds is fixed when the pod is made: on Kubernetes the reaper
// alone ends a claimed sandbox at its cap.)

const CAP_SECONDS = 6;
const GRACE_SECONDS = 2;
const local = testRuntime() === 'local';
const asRoot = process.getuid?.() === 0;

const replicas: Replicas | undefined = local
  ? await startReplicas({
      webs: 1,
      workers: 1,
      overrides: {
        PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
        PADDOCK_LOCAL_DEADLINE_GRACE_SECONDS: String(GRACE_SECONDS),
        PADDOCK_EXPIRY_WARNING_SECONDS: '0',
        PADDOCK_REAPER_SWEEP_SECONDS: '1',
        PADDOCK_WARM_POOL_SIZE: '1',
        PADDOCK_WARM_POOL_MAX_AGE_SECONDS: '60',
      },
    })
  : undefined;

test('a claimed sandbox ends at its claim\'s expiresAt plus the grace with web and worker killed, not at the pool\'s deadline', { skip: (!local && 'a pod\'s activeDeadlineSeconds cannot follow a claim') || (!asRoot && 'tells sandboxes apart by their host uids, which needs root') }, async () => {
  const r = replicas!;
  const pooled = await eventually('the pool holds a ready sandbox', 60_000, async () => {
    const rows = (await r.db.query<{ id: string }>(`select id from warm_sandboxes where deployment = $1 and status = 'ready'`, [deploymentOf(r.config)])).rows;
    return rows[0]?.id;
  });
  const account = await newAccount(r.url, 'hardcap-pool');
  const { id, expiresAt } = await sandboxWithWork(r.url, account);
  assert.equal(id, pooled, 'the create claimed the pooled sandbox');
  const uid = await sandboxUid(r, id);

  await r.kill('web', 0, 'SIGKILL');
  await r.kill('worker', 0, 'SIGKILL');
  await assertEndsAtItsCap(uid, expiresAt, GRACE_SECONDS);

  await r.restart('worker', 0);
  await eventually('the worker destroys the expired sandbox', 30_000, async () => {
    const row = (await r.db.query<{ state: string }>('select state from sandboxes where id = $1', [id])).rows[0];
    return row?.state === 'destroyed' ? true : undefined;
  });
  await eventually('nothing of it is left on the host', 10_000, async () => (localLeftovers(r.config.PADDOCK_DATA_DIR, id).length === 0 ? true : undefined));
  assert.deepEqual(processesOf(uid), []);
});
