import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { failsWith, json, ok, signedUpUser } from './cli-helpers.ts';

// A session's egress through the CLI (cli/README.md): `session create --egress/--allow`,
// `network set`, and `session get` showing it. What a policy lets through is the API's
// (test/sandboxes/network.test.ts). Run once per runtime.

const stack = await startSandboxStack();

test('session create --allow sets the list, session get shows it, network set changes it; flags that contradict or a rule that is not one are refused, naming the flag', async () => {
  const user = await signedUpUser(stack.url, 'clinet');
  const id = ok(await user.run(['session', 'create', '--allow', '198.51.100.0/24:443', '--allow', '[2001:db8::1]'])).trim();
  assert.match(id, /^sbx_/);
  assert.match(ok(await user.run(['session', 'get', id])), /^network:\s+allow 198\.51\.100\.0\/24:443, \[2001:db8::1\]$/m);
  assert.deepEqual(json(await user.run(['session', 'get', id, '--json'])).network, { egress: { allow: ['198.51.100.0/24:443', '[2001:db8::1]'] } });

  const closed = await user.run(['network', 'set', id, '--egress', 'none']);
  assert.equal(ok(closed), 'none\n');
  assert.match(closed.stderr, new RegExp(`${id} egress: none`));
  assert.deepEqual(json(await user.run(['network', 'set', '--session', id, '--egress', 'all', '--json'])).network, { egress: 'all' });

  const both = await user.run(['network', 'set', id, '--egress', 'all', '--allow', '203.0.113.9']);
  assert.equal(both.code, 2, both.stderr);
  assert.match(both.stderr, /--egress or --allow, not both/);
  const neither = await user.run(['network', 'set', id]);
  assert.equal(neither.code, 2, neither.stderr);
  assert.match(neither.stderr, /--egress none, --egress all, or --allow/);
  const domain = await user.run(['network', 'set', id, '--allow', '*.org']);
  failsWith(domain, 'invalid_request');
  assert.match(domain.stderr, /--allow/);
  assert.match(domain.stderr, /\*\.org/);
  const unknown = await user.run(['session', 'create', '--egress', 'some']);
  assert.equal(unknown.code, 2, unknown.stderr);
  assert.match(unknown.stderr, /--egress is none or all/);
});
