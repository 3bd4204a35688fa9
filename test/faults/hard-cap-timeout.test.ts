import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startReplicas, type Replicas } from '../helpers/replicas.ts';
import { newAccount, type TestAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';
import { call } from '../helpers/http.ts';
import { testRuntime } from '../helpers/sandbox-stack.ts';
import { assertEndsAtItsCap, processesOf, sandboxUid } from './hard-cap.ts';

// The local sandbox's own end follows its own timeout: one created with a timeout is made with the
// cap's deadline (its end may move later again) and then told its own; a move tells it the new
// one. With web and worker SIGKILLed after the moves, each still ends at its moved expiresAt plus
// the grace: one moved later outlives its first end, one moved earlier ends long before its cap.
// (On Kubernetes a pod's activeDeadlineSeconds stays at the cap: the reaper alone ends it sooner.)

const CAP_SECONDS = 60;
const GRACE_SECONDS = 2;
const local = testRuntime() === 'local';
const asRoot = process.getuid?.() === 0;

const replicas: Replicas | undefined = local && asRoot
  ? await startReplicas({
      webs: 1,
      workers: 1,
      overrides: {
        PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
        PADDOCK_LOCAL_DEADLINE_GRACE_SECONDS: String(GRACE_SECONDS),
        PADDOCK_EXPIRY_WARNING_SECONDS: '0',
        PADDOCK_REAPER_SWEEP_SECONDS: '1',
      },
    })
  : undefined;

async function withWork(r: Replicas, account: TestAccount, body: object): Promise<string> {
  const created = await call(r.url, 'POST', '/v1/sandboxes', { token: account.key, body });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.status, 'running');
  const started = await call(r.url, 'POST', `/v1/sandboxes/${created.body.id}/exec`, { token: account.key, body: { command: 'sleep 600', background: true } });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  return created.body.id as string;
}

async function moveTo(r: Replicas, account: TestAccount, id: string, timeoutSeconds: number): Promise<number> {
  const moved = await call(r.url, 'POST', `/v1/sandboxes/${id}/timeout`, { token: account.key, body: { timeoutSeconds } });
  assert.equal(moved.status, 200, JSON.stringify(moved.body));
  return Date.parse(moved.body.expiresAt as string);
}

test("a local sandbox's own end follows its timeout, moved later or earlier, with web and worker killed", { skip: (!local && "a pod's activeDeadlineSeconds stays at the cap") || (!asRoot && 'tells sandboxes apart by their host uids, which needs root') }, async () => {
  const r = replicas!;
  const account = await newAccount(r.url, 'hardcap-timeout');
  // Created with a twelve-second timeout (two creates and two execs fit in it on a loaded host),
  // then moved to sixteen: it must outlive 12 s + the grace.
  const later = await withWork(r, account, { timeoutSeconds: 12 });
  // Created with the cap, then moved to four seconds: it must end long before the cap.
  const earlier = await withWork(r, account, {});
  const [laterEnd, earlierEnd] = await Promise.all([moveTo(r, account, later, 16), moveTo(r, account, earlier, 4)]);
  const [laterUid, earlierUid] = await Promise.all([sandboxUid(r, later), sandboxUid(r, earlier)]);

  await r.kill('web', 0, 'SIGKILL');
  await r.kill('worker', 0, 'SIGKILL');
  await Promise.all([assertEndsAtItsCap(laterUid, laterEnd, GRACE_SECONDS), assertEndsAtItsCap(earlierUid, earlierEnd, GRACE_SECONDS)]);

  await r.restart('worker', 0);
  await eventually('the worker destroys both', 30_000, async () => {
    const rows = (await r.db.query<{ state: string; destroy_reason: string }>('select state, destroy_reason from sandboxes where id = any($1)', [[later, earlier]])).rows;
    return rows.length === 2 && rows.every((row) => row.state === 'destroyed' && row.destroy_reason === 'expired') ? true : undefined;
  });
  assert.deepEqual([...processesOf(laterUid), ...processesOf(earlierUid)], []);
});
