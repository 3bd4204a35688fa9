import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { exited } from '../helpers/processes.ts';
import { cliEnv, json, newSession, repoRoot, signedUpUser, cliCommand } from './cli-helpers.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

// A smoke run of the real picker in a pseudo-terminal: util-linux `script` gives `paddock` a TTY,
// and the keys written to script's standard input reach it as typed.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '3' } });

const ANSI = /\u001B(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007]*\u0007|[@-Z\\-_])/g;

test('paddock with no arguments in a terminal opens the picker: it draws, moves, creates and quits', { timeout: 120_000 }, async () => {
  const user = await signedUpUser(stack.url);
  const first = await newSession(user);

  // CI=true on purpose: CI runners set it, and Ink must still draw in a real terminal.
  const child = spawn('script', ['-qfec', `stty cols 120 rows 40; exec ${cliCommand().map((a) => `'${a}'`).join(' ')}`, '/dev/null'], {
    cwd: repoRoot,
    env: cliEnv(user.home, { TERM: 'xterm-256color', CI: 'true' }),
    stdio: 'pipe',
  });
  let raw = '';
  child.stdout.on('data', (d: Buffer) => (raw += d.toString()));
  child.stderr.on('data', (d: Buffer) => (raw += d.toString()));

  /** The last whole frame the picker drew, without escape sequences. */
  const lastFrame = () => {
    const text = raw.replace(ANSI, '').replace(/\r/g, '');
    const at = text.lastIndexOf('Paddock sessions');
    return at < 0 ? '' : text.slice(at);
  };
  const frameWhere = async (check: (f: string) => boolean, what: string) => {
    const deadline = Date.now() + 30_000;
    while (!check(lastFrame())) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no frame with ${what}; the output was:\n${raw.replace(ANSI, '')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return lastFrame();
  };

  try {
    // It draws: the session with its live countdown, and the quota footer.
    let f = await frameWhere((x) => x.includes(first) && x.includes('sandbox-hours this month'), 'the session list');
    assert.match(f, new RegExp(`> ${first} +running +\\S+ +[0-3]\\d:\\d\\d`));
    assert.match(f, /1\/3 concurrent sandboxes/);
    assert.match(f, /n new · s new from a snapshot · r refresh · q quit/);

    // It creates: n makes a second session, which shows up chosen, at the top.
    child.stdin.write('n');
    f = await frameWhere((x) => /Created sbx_\w+; it is starting\./.test(x), 'the created session');
    const created = /Created (sbx_\w+);/.exec(f)![1]!;
    f = await frameWhere((x) => new RegExp(`> ${created} `).test(x) && x.includes(first), 'both sessions');

    // It moves: down puts the cursor on the older session.
    child.stdin.write('\u001B[B');
    f = await frameWhere((x) => new RegExp(`> ${first} `).test(x), 'the cursor on the first session');
    assert.match(f, new RegExp(`^ {2}${created} `, 'm'));

    // It quits: q ends the program with exit code 0.
    child.stdin.write('q');
    const { code } = await exited(child);
    assert.equal(code, 0);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }

  const ids = json(await user.run(['session', 'ls', '--json'])).map((s: { id: string }) => s.id);
  assert.equal(ids.length, 2);
  assert.ok(ids.includes(first));
});
