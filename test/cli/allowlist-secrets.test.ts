import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startSandboxStack, testRuntime } from '../helpers/sandbox-stack.ts';
import { cliEnv, failsWith, json, newSession, ok, repoRoot, signedUpUser, cliCommand } from './cli-helpers.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

const stack = await startSandboxStack();

test('allowlist get, set and clear, as text and as JSON', async () => {
  const user = await signedUpUser(stack.url);
  const empty = await user.run(['allowlist', 'get']);
  assert.equal(ok(empty), '');
  assert.match(empty.stderr, /every command is allowed/);

  assert.equal(ok(await user.run(['allowlist', 'set', 'python3', 'ls', 'cat'])), 'cat\nls\npython3\n');
  const got = json(await user.run(['allowlist', 'get', '--json']));
  assert.deepEqual(got.commands, ['cat', 'ls', 'python3']);
  assert.match(got.updatedAt, /^\d{4}-/);

  failsWith(await user.run(['allowlist', 'set', '/bin/sh']), 'invalid_request', 1);
  assert.deepEqual(json(await user.run(['allowlist', 'clear', '--json'])).commands, []);
  assert.deepEqual(json(await user.run(['allowlist', 'get', '--json'])).commands, []);
});

test('secrets create reads the value from standard input, never an argument; ls and rm; the value reaches exec', async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  const created = await user.run(['secrets', 'create', 'API_TOKEN'], { input: 'tok-123\n' });
  assert.equal(ok(created), 'API_TOKEN\n');
  assert.match(created.stderr, /saved for the account/);

  const scoped = json(await user.run(['secrets', 'create', 'ONLY_HERE', '--session', id, '--json'], { input: 'here' }));
  assert.deepEqual({ name: scoped.name, sandboxId: scoped.sandboxId }, { name: 'ONLY_HERE', sandboxId: id });

  const table = ok(await user.run(['secrets', 'ls']));
  assert.match(table, /^NAME +SCOPE +DELIVERY +CREATED$/m);
  assert.match(table, /^API_TOKEN +account +env +/m);
  assert.ok(!table.includes('tok-123'));
  const list = json(await user.run(['secrets', 'ls', '--session', id, '--json']));
  assert.ok(list.some((s: { name: string }) => s.name === 'ONLY_HERE'));

  // The value is given to the command (and masked in its output by the service).
  const out = ok(await user.run(['exec', '--', 'sh', '-c', 'test "$API_TOKEN" = tok-123 && test "$ONLY_HERE" = here && echo same']));
  assert.equal(out, 'same\n');

  const rm = await user.run(['secrets', 'rm', 'API_TOKEN']);
  assert.equal(ok(rm), '');
  assert.match(rm.stderr, /Secret API_TOKEN removed/);
  const again = await user.run(['secrets', 'rm', 'API_TOKEN']);
  failsWith(again, 'secret_not_found', 1);
  assert.match(again.stderr, /Hint: .*secrets ls/);
  assert.deepEqual(json(await user.run(['secrets', 'rm', 'ONLY_HERE', '--session', id, '--json'])), { name: 'ONLY_HERE', sandboxId: id, deleted: true });
});

test('secrets create --inject-host brokers the secret instead: ls shows where it goes; a refusal names the flag', { skip: testRuntime() !== 'local' && 'a runtime that brokers credentials (local)' }, async () => {
  const user = await signedUpUser(stack.url);
  const value = 'brk-8e1c4a7d2f';
  const flags = ['--inject-host', 'API.example.com', '--inject-host', '*.example.org', '--inject-header', 'X-Api-Key', '--inject-format', 'key={value}'];
  const created = await user.run(['secrets', 'create', 'API_KEY', ...flags, '--json'], { input: value });
  assert.deepEqual(json(created).inject, { hosts: ['api.example.com', '*.example.org'], header: 'X-Api-Key', format: 'key={value}' });
  assert.match(created.stderr, /saved for the account, brokered to api\.example\.com, \*\.example\.org as X-Api-Key/);
  const defaulted = json(await user.run(['secrets', 'create', 'BEARER', '--inject-host', 'api.example.net', '--json'], { input: value }));
  assert.deepEqual(defaulted.inject, { hosts: ['api.example.net'], header: 'Authorization', format: 'Bearer {value}' });
  const table = ok(await user.run(['secrets', 'ls']));
  assert.match(table, /^API_KEY +account +api\.example\.com,\*\.example\.org +/m);
  assert.ok(!table.includes(value));

  const address = await user.run(['secrets', 'create', 'BAD', '--inject-host', 'api.example.com', '--inject-host', '10.0.0.1'], { input: value });
  failsWith(address, 'invalid_request', 1);
  assert.match(address.stderr, /--inject-host #2: "10\.0\.0\.1"/);
  const headerAlone = await user.run(['secrets', 'create', 'BAD', '--inject-header', 'X-Api-Key'], { input: value });
  failsWith(headerAlone, 'invalid_request', 1);
  assert.match(headerAlone.stderr, /--inject-host/);
  assert.deepEqual(json(await user.run(['secrets', 'ls', '--json'])).map((s: { name: string }) => s.name), ['API_KEY', 'BEARER']);
});

test('secrets create with nothing on standard input fails instead of prompting', async () => {
  const user = await signedUpUser(stack.url);
  // Standard input is /dev/null: no terminal to prompt on, and no value.
  const [node, script] = cliCommand();
  const child = spawn(node!, [script!, 'secrets', 'create', 'EMPTY'], { cwd: repoRoot, env: cliEnv(user.home), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const code = await new Promise((done) => child.once('close', done));
  assert.equal(code, 2);
  assert.equal(stdout, '');
  assert.match(stderr, /standard input is empty/);
  assert.deepEqual(json(await user.run(['secrets', 'ls', '--json'])), []);
});

test('an invalid secret name shows invalid_request with the reason', async () => {
  const user = await signedUpUser(stack.url);
  const r = await user.run(['secrets', 'create', 'not-a-name'], { input: 'v' });
  failsWith(r, 'invalid_request', 1);
  assert.match(r.stderr, /environment variable name/);
});
