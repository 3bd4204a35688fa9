import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDeployment } from '../helpers/deployment.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox, waitForSandbox } from '../helpers/sandboxes.ts';

// GET /v1/account and GET /v1/sandboxes/{id} answer from views kept in Redis (shared/cache/read-views.ts).
// The views here live an hour: whatever a test sees change, a writer marked stale, on whichever
// replica or worker it ran; and a hand edit in the database (which no writer announces) shows
// that the answer did come from a view.
// The cap leaves a create on a loaded host time to answer `running`; the expiry test ends its
// sandbox sooner with a timeout of its own.
const CAP_SECONDS = 120;
const EXPIRY_SECONDS = 15;
const stack = await startDeployment({
  apis: 2,
  overrides: {
    PADDOCK_READ_CACHE_SECONDS: '3600',
    PADDOCK_SESSION_CAP_SECONDS: String(CAP_SECONDS),
    PADDOCK_REAPER_SWEEP_SECONDS: '1',
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5',
  },
});
const [webA, webB] = stack.apiUrls as [string, string];

const account = (web: string, key: string) => call(web, 'GET', '/v1/account', { token: key });
const sandbox = (web: string, key: string, id: string) => call(web, 'GET', `/v1/sandboxes/${id}`, { token: key });
const handEditEmail = (id: string, email: string) => stack.sql('update accounts set email = $1 where id = $2', [email, id]);

test('GET /v1/account is one view for every replica, fresh after a create and a destroy, its hours counted when read', async () => {
  const a = await newAccount(webA, 'views-account');
  const first = await account(webA, a.key);
  assert.equal(first.status, 200);
  assert.equal(first.body.usage.concurrentSandboxes.active, 0);

  await handEditEmail(a.id, `edited-1-${a.email}`);
  for (const web of [webA, webB]) {
    const again = await account(web, a.key);
    assert.equal(again.body.email, a.email, `${web} answered from the view all replicas share`);
  }

  const created = await createSandbox(webB, a.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.status, 'running');
  const afterCreate = await account(webA, a.key);
  assert.equal(afterCreate.body.usage.concurrentSandboxes.active, 1, 'the create on the other replica made the view stale');
  assert.equal(afterCreate.body.email, `edited-1-${a.email}`);

  // Its running time grows in the view, with no change to mark it stale.
  await handEditEmail(a.id, `edited-2-${a.email}`);
  await sleep(400);
  const later = await account(webB, a.key);
  assert.equal(later.body.email, `edited-1-${a.email}`, 'still the view');
  assert.ok(later.body.usage.sandboxHours.used > afterCreate.body.usage.sandboxHours.used, `${later.body.usage.sandboxHours.used} > ${afterCreate.body.usage.sandboxHours.used}`);

  const destroyed = await call(webB, 'DELETE', `/v1/sandboxes/${created.body.id}`, { token: a.key });
  assert.equal(destroyed.status, 200, JSON.stringify(destroyed.body));
  const afterDestroy = await account(webA, a.key);
  assert.equal(afterDestroy.body.usage.concurrentSandboxes.active, 0);
  assert.equal(afterDestroy.body.email, `edited-2-${a.email}`);
  const rolled = afterDestroy.body.usage.sandboxHours.used;
  assert.ok(rolled >= later.body.usage.sandboxHours.used, 'its time rolled up, not lost');
  await sleep(300);
  assert.equal((await account(webB, a.key)).body.usage.sandboxHours.used, rolled, 'nothing runs: the hours stand still');
});

test('GET /v1/sandboxes/{id} follows each transition, whoever makes it: pending, running, terminating, destroyed', async () => {
  const a = await newAccount(webA, 'views-sandbox');
  const created = await createSandbox(webA, a.key, '?wait=false', { metadata: { label: 'before' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const seen = await sandbox(webA, a.key, id);
  assert.equal(seen.status, 200);
  assert.ok(['pending', 'running'].includes(seen.body.status), seen.body.status);

  // The worker's pending → running reaches both replicas' answers.
  const running = await waitForSandbox(webB, a.key, id, (s) => s.status === 'running', 20_000);
  assert.equal((await sandbox(webA, a.key, id)).body.status, 'running');
  assert.ok(running.readyAt);

  await stack.sql(`update sandboxes set metadata = '{"label":"hand-edited"}' where id = $1`, [id]);
  assert.deepEqual((await sandbox(webA, a.key, id)).body.metadata, { label: 'before' }, 'answered from the view');

  const asked = await call(webA, 'DELETE', `/v1/sandboxes/${id}?wait=false`, { token: a.key });
  assert.equal(asked.status, 200, JSON.stringify(asked.body));
  const right = await sandbox(webB, a.key, id);
  assert.ok(right.body.status === 'terminating' || right.body.state === 'destroyed', `no longer running: ${JSON.stringify(right.body)}`);
  const gone = await waitForSandbox(webA, a.key, id, (s) => s.state === 'destroyed', 20_000);
  assert.equal(gone.status, 'terminated');
  assert.equal(gone.destroyReason, 'user');
  assert.deepEqual(gone.metadata, { label: 'hand-edited' }, 'read again after the change');
  // A destroyed sandbox's answer is not kept (what an account can make Redis hold stays within its
  // concurrent cap): each read is the database's.
  await stack.sql(`update sandboxes set metadata = '{"label":"edited-when-destroyed"}' where id = $1`, [id]);
  assert.deepEqual((await sandbox(webB, a.key, id)).body.metadata, { label: 'edited-when-destroyed' });
});

test("another account's sandbox answers 404 on every replica, though its owner's view is kept", async () => {
  const [owner, other] = await Promise.all([newAccount(webA, 'views-owner'), newAccount(webA, 'views-other')]);
  const created = await createSandbox(webA, owner.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  assert.equal((await sandbox(webA, owner.key, id)).status, 200);
  for (const web of [webA, webB]) assertProblem(await sandbox(web, other.key, id), 404, 'sandbox_not_found');
  // The other account's views name nothing of the owner's.
  const theirs = await account(webB, other.key);
  assert.equal(theirs.body.usage.concurrentSandboxes.active, 0);
  assert.equal(theirs.body.id, other.id);
  assert.equal((await call(webA, 'DELETE', `/v1/sandboxes/${id}`, { token: owner.key })).status, 200);
});

test("the reaper's end of a sandbox at its cap reaches its views and its account's", async () => {
  const a = await newAccount(webA, 'views-expiry');
  const created = await createSandbox(webA, a.key, '', { timeoutSeconds: EXPIRY_SECONDS });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  assert.equal((await sandbox(webB, a.key, id)).body.state, 'active');
  assert.equal((await account(webB, a.key)).body.usage.concurrentSandboxes.active, 1);
  const ended = await waitForSandbox(webB, a.key, id, (s) => s.state === 'destroyed', (EXPIRY_SECONDS + 20) * 1000);
  assert.equal(ended.destroyReason, 'expired');
  assert.equal((await account(webB, a.key)).body.usage.concurrentSandboxes.active, 0);
});
