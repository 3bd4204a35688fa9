import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { uniqueEmail } from '../helpers/config.ts';
import { PASSWORD, json, newSession, ok, signedUpUser, tempHome } from './cli-helpers.ts';
import { Terminal } from './tmux.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

// The prompts as a person meets them: in a real terminal (tmux), reading what the screen shows.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '3' } });

async function inTerminal<T>(t: Terminal, body: (t: Terminal) => Promise<T>): Promise<T> {
  try {
    return await body(t);
  } finally {
    t.close();
  }
}

test('signup in a terminal: the email echoes, the password never does; a short one is refused before it is asked again', { timeout: 90_000 }, async () => {
  const home = tempHome();
  const email = uniqueEmail('pty');
  await inTerminal(new Terminal(home, ['signup', '--url', stack.url]), async (t) => {
    await t.waitFor((s) => s.includes('Email:'), 'the email prompt');
    t.type(email);
    t.press('Enter');
    await t.waitFor((s) => s.includes('Password (at least 10 characters):'), 'the password prompt, with the rule');
    t.type('short1');
    t.press('Enter');
    // Refused at once, with the rule, and asked again: not after typing it twice.
    let s = await t.waitFor((x) => x.includes('The password must be at least 10 characters (it has 6).'), 'the rule');
    assert.ok(!s.includes('Repeat the password'), s);
    await t.waitFor((x) => x.split('Password (at least 10 characters):').length === 3, 'the password asked again');
    t.type(PASSWORD);
    t.press('Enter');
    await t.waitFor((x) => x.includes('Repeat the password:'), 'the second prompt');
    t.type(PASSWORD);
    t.press('Enter');
    assert.equal(await t.exitCode(), 0, t.screen());
    s = t.screen();
    assert.ok(s.includes(`Email: ${email}`), s);
    assert.match(s, new RegExp(`Signed up as ${email.replace('.', '\\.')}`));
    // Nothing of either password is on the screen.
    assert.ok(!s.includes('short1'), s);
    assert.ok(!s.includes(PASSWORD) && !s.includes('horse'), s);
  });
  assert.match(String(parse(readFileSync(join(home, 'config', 'paddock', 'config.toml'), 'utf8')).api_key), /^pdk_live_/);
});

test('keys ls in a terminal: the password typed after the email prompt is hidden', { timeout: 90_000 }, async () => {
  const user = await signedUpUser(stack.url);
  await inTerminal(new Terminal(user.home, ['keys', 'ls']), async (t) => {
    await t.waitFor((s) => s.includes('Email:'), 'the email prompt');
    t.type(user.email);
    t.press('Enter');
    await t.waitFor((s) => /^Password:/m.test(s), 'the password prompt');
    t.type(PASSWORD);
    // Typed, not yet entered: still nothing on the screen.
    await new Promise((r) => setTimeout(r, 300));
    assert.match(t.screen(), /^Password: *$/m);
    t.press('Enter');
    assert.equal(await t.exitCode(), 0, t.screen());
    const s = t.screen();
    assert.match(s, /\(this CLI\)/);
    assert.ok(!s.includes(PASSWORD) && !s.includes('horse'), s);
  });
});

test('keys rm of the key this CLI uses asks first: no keeps it, yes revokes it', { timeout: 90_000 }, async () => {
  const user = await signedUpUser(stack.url);
  const auth = ['--email', user.email, '--password-stdin'];
  const [key] = json(await user.run(['keys', 'ls', ...auth, '--json'], { input: PASSWORD }));
  for (const [answer, code] of [['n', 1], ['y', 0]] as const) {
    await inTerminal(new Terminal(user.home, ['keys', 'rm', key.id, '--email', user.email]), async (t) => {
      await t.waitFor((s) => /^Password:/m.test(s), 'the password prompt');
      t.type(PASSWORD);
      t.press('Enter');
      const s = await t.waitFor((x) => x.includes(`Revoke ${key.id}? [y/N]`), 'the confirmation');
      assert.match(s, new RegExp(`${key.id} \\(.*\\) is the API key this CLI uses`));
      t.type(answer);
      t.press('Enter');
      assert.equal(await t.exitCode(), code, t.screen());
    });
    const whoami = await user.run(['whoami']);
    if (answer === 'n') ok(whoami);
    else assert.equal(whoami.code, 1);
  }
});

test('session rm (or destroy) of the session it picked asks first at a terminal: no keeps it, yes destroys it; a named one is not asked', { timeout: 120_000 }, async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  for (const [command, answer, code] of [['rm', 'n', 1], ['destroy', 'y', 0]] as const) {
    await inTerminal(new Terminal(user.home, ['session', command]), async (t) => {
      const s = await t.waitFor((x) => x.includes('[y/N]'), 'the confirmation');
      assert.match(s, new RegExp(`Destroy ${id}, the one active session, and its files\\?`));
      t.type(answer);
      t.press('Enter');
      assert.equal(await t.exitCode(), code, t.screen());
    });
    const state = json(await user.run(['session', 'get', id, '--json'])).state;
    assert.equal(state, answer === 'n' ? 'active' : 'destroyed');
  }
  const named = await newSession(user);
  await inTerminal(new Terminal(user.home, ['session', 'destroy', named]), async (t) => {
    assert.equal(await t.exitCode(), 0, t.screen());
    assert.doesNotMatch(t.screen(), /\[y\/N\]/);
  });
});

test('NO_COLOR: the picker draws without colours, its cursor still shown; without it, in colour', { timeout: 120_000 }, async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  // Colour SGR parameters: 30-37, 90-97 (foreground), 38;… (256 and true colour).
  const COLOUR = /\u001B\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|38)(?:;[0-9;]*)?m/;
  const draw = async (env: Record<string, string | undefined>) =>
    inTerminal(new Terminal(user.home, [], env), async (t) => {
      const s = await t.waitFor((x) => x.includes(id) && x.includes('sandbox-hours this month'), 'the picker', 30_000, true);
      t.press('q');
      await t.exitCode();
      return s;
    });
  const plain = await draw({ NO_COLOR: '1' });
  assert.doesNotMatch(plain, COLOUR, JSON.stringify(plain));
  assert.match(plain, new RegExp(`> ${id}`));
  const coloured = await draw({});
  assert.match(coloured, COLOUR);
});
