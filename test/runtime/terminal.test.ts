import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../shared/ids.ts';
import { createKubernetesRuntime } from '../../shared/runtime/kubernetes/index.ts';
import { SandboxGoneError, type SandboxRuntime, type TerminalSession } from '../../shared/runtime/types.ts';
import { startStandinFixture, type StandinFixture } from '../k8s-standin/fixture.ts';
import { setupLocalRuntime } from '../helpers/local-runtime.ts';

// runtime.terminal on both runtimes, with no API in front: a real pseudo-terminal in a real
// sandbox (the local runtime's own devpts; a pod's tty through the stand-in, which runs it on the
// local runtime's terminal as a kubelet runs it on the container's).

interface Opened {
  session: TerminalSession;
  output(): string;
  abort: AbortController;
}

async function open(runtime: SandboxRuntime, id: string, argv: string[], size = { cols: 80, rows: 24 }, env: Record<string, string> = {}): Promise<Opened> {
  let text = '';
  const abort = new AbortController();
  const session = await runtime.terminal(id, {
    argv,
    env: { TERM: 'xterm', ...env },
    ...size,
    signal: abort.signal,
    onOutput: (chunk) => void (text += Buffer.from(chunk).toString()),
  });
  return { session, output: () => text, abort };
}

/** Retries an assertion for up to 10 s: output arrives when it arrives. */
async function until(check: () => void): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const typed = (o: Opened, text: string) => o.session.write(Buffer.from(text));

function suite(name: string, setup: () => Promise<{ runtime: SandboxRuntime; sandbox(): Promise<string>; close(): Promise<void> }>) {
  describe(`terminal on the ${name} runtime`, () => {
    let runtime: SandboxRuntime;
    let sandbox: () => Promise<string>;
    let close: () => Promise<void>;
    let id: string;
    before(async () => {
      ({ runtime, sandbox, close } = await setup());
      id = await sandbox();
    });
    after(() => close());

    test('is a terminal of the given size, resized on request, with the exit code', async () => {
      const t = await open(runtime, id, ['sh'], { cols: 91, rows: 17 });
      await typed(t, 'tty; stty size\n');
      await until(() => assert.match(t.output(), /\/dev\/pts\/\d+[\s\S]*17 91/));
      await t.session.resize(132, 43);
      // Set a moment after the call: asked again until it shows.
      await until(() => {
        void typed(t, 'stty size\n');
        assert.match(t.output(), /43 132/);
      });
      await typed(t, 'exit 7\n');
      assert.deepEqual(await t.session.exit, { exitCode: 7, signal: null });
    });

    test('a resize made before the command has started is set once it starts, not overwritten by the first size', async () => {
      for (let i = 0; i < 5; i++) {
        const t = await open(runtime, id, ['sh'], { cols: 80, rows: 24 });
        // Settled: set (local), or passed on (Kubernetes): what is typed next is read at that size.
        await t.session.resize(100 + i, 30);
        await typed(t, 'stty size; exit\n');
        await t.session.exit;
        assert.match(t.output(), new RegExp(`^(\\$ )?30 ${100 + i}\\r?$`, 'm'), `try ${i}: ${JSON.stringify(t.output())}`);
      }
    });

    test('echoes what is typed, and Ctrl-C interrupts the foreground command, not the shell', async () => {
      const t = await open(runtime, id, ['sh']);
      // Interrupted once the shell runs the line (the echo of the line typed is sl""eeping): a
      // Ctrl-C at a fixed moment reached the shell before the sleep on a loaded host, and the
      // sleep then ran its 30 s.
      await typed(t, 'echo sl""eeping; sleep 30\n');
      await until(() => assert.match(t.output(), /sleeping/));
      await new Promise((resolve) => setTimeout(resolve, 300));
      await typed(t, '\x03');
      await typed(t, 'echo after-$((6*7))\n');
      await until(() => assert.match(t.output(), /after-42/));
      await typed(t, 'exit\n');
      assert.equal((await t.session.exit).exitCode, 0);
    });

    test('what is typed before the command has started is echoed and read as typed', async () => {
      const t = await open(runtime, id, ['sh']);
      // At once: on Kubernetes the wrapper has not even said it is there yet. (Not Ctrl-C: typed
      // ahead, it discards what was typed before it, as on any terminal.)
      await typed(t, "echo ab''cd\n");
      await until(() => assert.match(t.output(), /^(\$ )?abcd\r?$/m));
      assert.match(t.output(), /echo ab''cd/, 'the terminal echoes what was typed');
      await typed(t, 'exit\n');
      assert.equal((await t.session.exit).exitCode, 0);
    });

    test('an abort kills the whole command, background processes too', async () => {
      const marker = `m${Date.now()}`;
      const t = await open(runtime, id, ['sh']);
      await typed(t, `(trap '' HUP; exec sleep 300 ${marker}) & echo started\n`);
      await until(() => assert.match(t.output(), /started/));
      t.abort.abort();
      await t.session.exit;
      const check = await open(runtime, id, ['sh', '-c', `ps -eo args | grep -c "^sleep 300 ${marker}" ; exit 0`]);
      await check.session.exit;
      await until(() => assert.match(check.output(), /^0\s*$/m));
    });

    test('the command gets the environment it was given, and the sandbox user', async () => {
      const t = await open(runtime, id, ['sh', '-c', 'echo "v=$PADDOCK_T_VALUE u=$(id -u) cwd=$(pwd)"'], undefined, { PADDOCK_T_VALUE: 'multi\nline' });
      await t.session.exit;
      assert.match(t.output(), /v=multi\r?\nline u=\d+ cwd=\/workspace/);
      assert.doesNotMatch(t.output(), /paddock-[0-9a-f]{16}/, 'no marker reaches the output');
      assert.doesNotMatch(t.output(), /PADDOCK_T_VALUE/, 'the command is never echoed (its environment holds the secrets)');
    });

    test("each sandbox has pseudo-terminals of its own: another sandbox's are not there", async () => {
      const held = await open(runtime, id, ['sh']);
      const second = await open(runtime, id, ['sh']);
      // The first terminal's pty may come a moment after its open resolves: look again until both are there.
      const deadline = Date.now() + 10_000;
      while (!/^(\$ )?0 1 ptmx \r?$/m.test(second.output())) {
        assert.ok(Date.now() < deadline, `the two terminals' ptys never showed together:\n${second.output()}`);
        await typed(second, 'ls /dev/pts | tr "\\n" " "; echo\n');
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const other = await sandbox();
      const alone = await open(runtime, other, ['sh', '-c', 'ls /dev/pts | tr "\\n" " "; echo']);
      await alone.session.exit;
      assert.match(alone.output(), /^0 ptmx \r?$/m);
      held.abort.abort();
      second.abort.abort();
      await Promise.all([held.session.exit, second.session.exit]);
      await runtime.destroy(other);
    });

    test('a destroyed sandbox ends its terminal', async () => {
      const other = await sandbox();
      const t = await open(runtime, other, ['sh']);
      await typed(t, 'echo ready\n');
      await until(() => assert.match(t.output(), /ready/));
      await runtime.destroy(other);
      await assert.rejects(t.session.exit, (err: Error) => err instanceof SandboxGoneError || /ended|closed/.test(err.message));
      await assert.rejects(runtime.terminal(other, { argv: ['sh'], cols: 80, rows: 24, onOutput: () => undefined }), SandboxGoneError);
    });
  });
}

suite('local', async () => {
  const t = { after: (fn: () => Promise<void>) => void closers.push(fn) } as never;
  const closers: (() => Promise<void>)[] = [];
  const setup = await setupLocalRuntime(t);
  return { runtime: setup.runtime, sandbox: setup.sandbox, close: async () => { for (const fn of closers) await fn(); } };
});

suite('kubernetes', async () => {
  const fixture: StandinFixture = await startStandinFixture();
  const runtime = createKubernetesRuntime({
    kubeConfig: fixture.standin.kubeConfig,
    namespace: 'paddock-test',
    defaultImage: 'docker.io/library/debian:bookworm-slim',
    allowedImages: [],
    resources: { cpuRequest: '250m', cpuLimit: '1', memoryRequest: '256Mi', memoryLimit: '1Gi' },
    deadlineGraceSeconds: 120,
  });
  return {
    runtime,
    async sandbox() {
      const id = newId('sbx');
      await runtime.create({ id, accountId: 'acct_test', capSeconds: 600 });
      return id;
    },
    async close() {
      await runtime.close();
      await fixture.close();
    },
  };
});
