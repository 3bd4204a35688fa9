import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';

// A hostile tenant's kill storm and destroy that does not finish, through HTTP rather than at the runtime:
// many commands timing out at once, each leaving processes that left its session, and the destroy
// of a sandbox holding a tree deeper than the host's PATH_MAX. Runs on both runtimes.

const stack = await startSandboxStack({
  overrides: {
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '10000',
    // Room for the storm's processes: 40 commands of five processes each.
    PADDOCK_LOCAL_PIDS_MAX: '512',
    PADDOCK_INFLIGHT_EXEC_PER_SANDBOX: '40',
    PADDOCK_INFLIGHT_EXEC_PER_ACCOUNT: '40',
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '1',
  },
});

function exec(account: TestAccount, sandboxId: string, body: unknown) {
  return call(stack.url, 'POST', `/v1/sandboxes/${sandboxId}/exec`, { token: account.key, body });
}

async function tenant(label: string) {
  const account = await newAccount(stack.url, label);
  const created = await createSandbox(stack.url, account.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return { account, sandboxId: created.body.id as string };
}

test('a storm of commands timing out together: every one answers timed out, nothing of them runs on, the neighbour is served', async () => {
  const attacker = await tenant('killstorm');
  const neighbour = await tenant('stormneighbour');
  const storm = Promise.all(
    Array.from({ length: 40 }, () => exec(attacker.account, attacker.sandboxId, { command: '(setsid sleep 501 &); (sleep 502 &); sleep 503', timeoutSeconds: 2 })),
  );
  const beside = [];
  for (let i = 0; i < 5; i++) beside.push(await exec(neighbour.account, neighbour.sandboxId, { command: ['echo', `n${i}`] }));
  const answers = await storm;
  for (const answer of answers) {
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal((answer.body as { timedOut: boolean }).timedOut, true, JSON.stringify(answer.body));
  }
  beside.forEach((answer, i) => {
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal((answer.body as { stdout: string }).stdout, `n${i}\n`);
  });
  // Ended by the time each answered on the local runtime (their cgroups); on Kubernetes by the
  // kill execs that follow a timeout, a moment later.
  let left = '';
  await eventually('every process the timed-out commands started is ended', 20_000, async () => {
    const ps = await exec(attacker.account, attacker.sandboxId, { command: 'ps -eo args | grep "^sleep 50[123]" || true' });
    left = (ps.body as { stdout: string }).stdout;
    return left === '' ? true : undefined;
  }).catch(() => assert.fail(`still running:\n${left}`));
});

test('destroying a sandbox holding a tree deeper than PATH_MAX finishes, and frees its place under the quota', async () => {
  const { account, sandboxId } = await tenant('deeptree');
  // Relative steps (a shell's cd refuses a path past PATH_MAX): 100 levels of 200 bytes, about
  // five times the host's PATH_MAX, and a few thousand files beside.
  const made = await exec(account, sandboxId, {
    command: `mkdir many && (cd many && seq 1 3000 | xargs touch) && python3 -c "import os
for _ in range(100): os.mkdir('d' * 200); os.chdir('d' * 200)
open('leaf', 'w').close()
print('made')"`,
    timeoutSeconds: 60,
  });
  assert.equal((made.body as { stdout: string }).stdout, 'made\n', JSON.stringify(made.body));
  const destroyed = await call(stack.url, 'DELETE', `/v1/sandboxes/${sandboxId}`, { token: account.key });
  assert.equal(destroyed.status, 200, JSON.stringify(destroyed.body));
  assert.equal((destroyed.body as { state: string }).state, 'destroyed');
  // The account's one place is free again.
  const next = await createSandbox(stack.url, account.key);
  assert.equal(next.status, 201, JSON.stringify(next.body));
  assert.equal((next.body as { status: string }).status, 'running');
});
