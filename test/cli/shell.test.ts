import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { newSession, signedUpUser } from './cli-helpers.ts';
import { Terminal } from './tmux.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

// `paddock shell` in a real terminal (tmux): what a person types reaches the session's shell,
// what it prints shows here, the window's size follows, and the local terminal is sane afterwards.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '4' } });

// Run in the window once paddock has ended: whether the terminal is back in line mode with echo.
const TTY_STATE = `printf '[tty %s]\\n' "$(stty -a | tr ' ;' '\\n\\n' | grep -x -e -icanon -e icanon -e -echo -e echo | tr '\\n' ' ')"`;

async function inTerminal<T>(t: Terminal, body: (t: Terminal) => Promise<T>): Promise<T> {
  try {
    return await body(t);
  } finally {
    t.close();
  }
}

test('paddock shell: type, see, resize, Ctrl-C to the remote side, exit 3 is its exit code, the terminal sane after', { timeout: 120_000 }, async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  await inTerminal(new Terminal(user.home, ['shell', '--session', id, '--', 'sh'], {}, TTY_STATE), async (t) => {
    t.type('echo "hi-$((40 + 2))"\r');
    await t.waitFor((s) => /(^|\$ )hi-42$/m.test(s), 'the command’s output');
    t.type('stty size\r');
    await t.waitFor((s) => /(^|\$ )40 120$/m.test(s), 'the window’s size');
    t.resize(100, 30);
    await t.waitFor(() => {
      t.type('stty size\r');
      return /(^|\$ )30 100$/m.test(t.screen());
    }, 'the new size');
    // Ctrl-C goes to the remote foreground command, not to paddock.
    t.type('sleep 30; echo not-interrupted\r');
    await new Promise((resolve) => setTimeout(resolve, 500));
    t.press('C-c');
    t.type('echo "still-$((1 + 1))"\r');
    await t.waitFor((s) => /(^|\$ )still-2$/m.test(s), 'the shell alive after Ctrl-C');
    assert.doesNotMatch(t.screen(), /(^|\$ )not-interrupted$|\[exit/m);
    t.type('exit 3\r');
    assert.equal(await t.exitCode(), 3);
    assert.match(t.screen(), /\[tty icanon echo \]/);
  });
});

test('paddock shell: a session destroyed under it ends it with a message and a non-zero exit, the terminal sane', { timeout: 120_000 }, async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  await inTerminal(new Terminal(user.home, ['shell', '--session', id], {}, TTY_STATE), async (t) => {
    t.type('echo "ready-$((2 * 3))"\r');
    await t.waitFor((s) => /(^|\$ )ready-6$/m.test(s), 'the login shell');
    const rm = await user.run(['session', 'rm', id]);
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal(await t.exitCode(), 1);
    assert.match(t.screen(), /paddock: the session is gone: sandbox destroyed \(user\)/);
    assert.match(t.screen(), /\[tty icanon echo \]/);
  });
});

test('paddock shell without a terminal refuses, naming paddock exec', async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  const r = await user.run(['shell', '--session', id], { input: 'echo hi\n' });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /needs a terminal/);
  assert.match(r.stderr, /paddock exec/);
});

test('the picker’s "Open a shell" runs a shell in the session and comes back to the picker when it ends', { timeout: 120_000 }, async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  await inTerminal(new Terminal(user.home, [], { CI: 'true' }, TTY_STATE), async (t) => {
    await t.waitFor((s) => s.includes(id) && s.includes('q quit'), 'the session list');
    t.press('Enter');
    await t.waitFor((s) => s.includes('Open a shell'), 'the actions');
    // Enter until the menu has taken it (its keys are live a moment after it is drawn): the
    // shell starts on a cleared screen.
    let pressed = 0;
    await t.waitFor((s) => {
      if (!s.includes('Open a shell')) return true;
      if (pressed++ % 5 === 0) t.press('Enter');
      return false;
    }, 'the shell opening');
    t.type('echo "in-$((3 * 3))"\r');
    await t.waitFor((s) => /(^|\$ )in-9$/m.test(s), 'the shell');
    t.type('exit\r');
    await t.waitFor((s) => /The shell in sbx_\w+ ended \(exit code 0\)/.test(s) && s.includes('q quit'), 'the picker again');
    // As the menu's, the list's keys are live a moment after it is drawn.
    let quits = 0;
    await t.waitFor((s) => {
      if (quits++ % 5 === 0) t.press('q');
      return /\[exit \d+\]/.test(s);
    }, 'the picker quitting');
    assert.equal(await t.exitCode(), 0);
    assert.match(t.screen(), /\[tty icanon echo \]/);
  });
});

test('paddock shell refused by the allowlist says why (the problem of the refused upgrade) and exits 125', { timeout: 120_000 }, async () => {
  const user = await signedUpUser(stack.url);
  const id = await newSession(user);
  const set = await user.run(['allowlist', 'set', 'ls']);
  assert.equal(set.code, 0, set.stderr);
  await inTerminal(new Terminal(user.home, ['shell', '--session', id], {}, TTY_STATE), async (t) => {
    assert.equal(await t.exitCode(), 125);
    assert.match(t.screen(), /command_not_allowed/);
    assert.match(t.screen(), /\[tty icanon echo \]/);
  });
});
