import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

const stack = await startSandboxStack({ apis: 2 });
const [apiA, apiB] = stack.apis.map((a) => a.url) as [string, string];

async function setup() {
  const a = await newAccount(apiA);
  const s = (await createSandbox(apiA, a.key)).body;
  const exec = (body: unknown, url = apiA) => call(url, 'POST', `/v1/sandboxes/${s.id}/exec`, { token: a.key, body });
  const put = (body: unknown, url = apiA) => call(url, 'PUT', '/v1/allowlist', { token: a.key, body });
  return { a, s, exec, put };
}

test('an empty allowlist allows everything; GET answers it', async () => {
  const { a, exec } = await setup();
  const got = await call(apiA, 'GET', '/v1/allowlist', { token: a.key });
  assert.deepEqual(got.body, { commands: [], updatedAt: null });
  assert.equal((await exec({ command: 'id -u && ls / >/dev/null && echo ok' })).body.exitCode, 0);
});

test('PUT validates and normalises; DELETE clears', async () => {
  const { a, put } = await setup();
  const ok = await put({ commands: ['ls', 'echo', 'ls', 'grep'] });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.deepEqual(ok.body.commands, ['echo', 'grep', 'ls']);
  assert.ok(Date.parse(ok.body.updatedAt));
  for (const bad of [{ commands: ['/bin/ls'] }, { commands: ['..'] }, { commands: ['a b'] }, { commands: 'ls' }, { commands: ['ls'], extra: true }, {}]) {
    assertProblem(await put(bad), 400, 'invalid_request');
  }
  assert.deepEqual((await call(apiA, 'GET', '/v1/allowlist', { token: a.key })).body.commands, ['echo', 'grep', 'ls']);
  assert.equal((await call(apiA, 'DELETE', '/v1/allowlist', { token: a.key })).status, 204);
  assert.deepEqual((await call(apiA, 'GET', '/v1/allowlist', { token: a.key })).body.commands, []);
});

test('a refused command answers 403 naming the program, and nothing runs; every replica enforces it', async () => {
  const { exec, put } = await setup();
  await put({ commands: ['echo', 'ls', 'cat'] });
  assert.equal((await exec({ command: 'echo hi | cat' }, apiB)).body.stdout, 'hi\n');
  assert.equal((await exec({ command: ['/bin/ls', '/workspace'] }, apiB)).body.exitCode, 0);
  for (const [command, program] of [
    ['touch /tmp/ran', 'touch'],
    ['echo ok; touch /tmp/ran', 'touch'],
    ['echo $(touch /tmp/ran)', ''],
    ['echo `touch /tmp/ran`', ''],
    ['sh -c "touch /tmp/ran"', 'sh'],
    [['env', 'touch', '/tmp/ran'], 'env'],
    ['eval touch /tmp/ran', 'eval|touch'],
  ] as const) {
    const res = await exec({ command }, apiB);
    assertProblem(res, 403, 'command_not_allowed');
    if (program) assert.match(res.body.detail, new RegExp(program), res.body.detail);
  }
  await put({ commands: ['echo', 'ls', 'cat', 'test'] });
  assert.equal((await exec({ command: 'test -e /tmp/ran && echo ran || echo clean' })).body.stdout, 'clean\n');
});

test("a change of the allowlist applies to the next exec on every replica, after execs that kept the sandbox's policy", async () => {
  const { a, exec, put } = await setup();
  const touch = { command: 'touch /tmp/ran && echo touched' };
  for (const url of [apiA, apiB, apiA, apiB]) assert.equal((await exec(touch, url)).body.stdout, 'touched\n');
  assert.equal((await put({ commands: ['echo'] }, apiB)).status, 200);
  for (const url of [apiA, apiB]) {
    assertProblem(await exec(touch, url), 403, 'command_not_allowed');
    assert.equal((await exec({ command: 'echo hi' }, url)).body.stdout, 'hi\n');
  }
  assert.equal((await call(apiA, 'DELETE', '/v1/allowlist', { token: a.key })).status, 204);
  for (const url of [apiB, apiA]) assert.equal((await exec(touch, url)).body.stdout, 'touched\n');
});

test('with an allowlist, the exec env may not steer programs (PATH, LD_PRELOAD)', async () => {
  const { exec, put } = await setup();
  await put({ commands: ['echo'] });
  assertProblem(await exec({ command: 'echo hi', env: { PATH: '/workspace' } }), 403, 'command_not_allowed');
  assertProblem(await exec({ command: 'echo hi', env: { LD_PRELOAD: '/workspace/x.so' } }), 403, 'command_not_allowed');
  assert.equal((await exec({ command: 'echo "$X"', env: { X: 'fine' } })).body.stdout, 'fine\n');
});

test("the allowlist is per account: another account's list does not apply", async () => {
  const first = await setup();
  const second = await setup();
  await first.put({ commands: ['echo'] });
  assertProblem(await first.exec({ command: 'ls' }), 403, 'command_not_allowed');
  assert.equal((await second.exec({ command: 'ls /' })).body.exitCode, 0);
});

test('a file the sandbox writes under an allowed name never runs: paths outside the system directories are refused, and names resolve there', async () => {
  const { exec, put } = await setup();
  // Before the allowlist: an executable `ls` of the sandbox's own, as an archive upload or exec could make it.
  const made = await exec({ command: "mkdir -p /workspace/bin && printf '#!/bin/sh\\necho PWNED\\n' > /workspace/bin/ls && chmod 755 /workspace/bin/ls && echo made" });
  assert.equal(made.body.stdout, 'made\n');
  await put({ commands: ['echo', 'ls', 'env', 'nohup'] });
  for (const command of [['/workspace/bin/ls'], ['bin/ls'], ['./bin/ls'], 'bin/ls', './bin/ls -la', '/workspace/bin/ls', 'cd bin && ./ls', ['env', '/workspace/bin/ls'], 'nohup bin/ls', ['/usr/bin/../../workspace/bin/ls']]) {
    const res = await exec({ command, cwd: '/workspace' }, apiB);
    assertProblem(res, 403, 'command_not_allowed');
    assert.match(res.body.detail, /relative path|outside the system's program directories/, JSON.stringify(command));
  }
  // The system's `ls`, by name or by its path; every command starts with the system's PATH.
  const listed = await exec({ command: 'ls /workspace/bin', cwd: '/workspace/bin' });
  assert.equal(listed.body.stdout, 'ls\n');
  assert.equal((await exec({ command: ['/usr/bin/ls', '/workspace/bin'] })).body.stdout, 'ls\n');
  assert.equal((await exec({ command: 'echo "$PATH"' })).body.stdout, '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n');
});
