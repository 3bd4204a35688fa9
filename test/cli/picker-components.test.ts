import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanup, render } from 'ink-testing-library';
import { PaddockApiError, PaddockConnectionError } from '../../cli/api/index.ts';
import type { Account, ExecStreamEvent, Sandbox, Snapshot } from '../../cli/api/types.ts';
import { h } from '../../cli/ui/h.ts';
import { Picker } from '../../cli/ui/picker.ts';
import type { PickerApi } from '../../cli/ui/picker-api.ts';
import { SessionTable } from '../../cli/ui/session-table.ts';
import { QuotaFooter } from '../../cli/ui/quota-footer.ts';
import { ActionMenu } from '../../cli/ui/action-menu.ts';
import { ConfirmDestroy } from '../../cli/ui/confirm-destroy.ts';
import { addOutput } from '../../cli/ui/exec-panel.ts';

afterEach(() => cleanup());

const T0 = Date.parse('2026-01-01T12:00:00Z');
const DOWN = '\u001B[B';
const UP = '\u001B[A';
const ENTER = '\r';
const ESC = '\u001B';

function sandbox(id: string, createdAgoS: number, status: Sandbox['status'] = 'running'): Sandbox {
  const created = T0 - createdAgoS * 1000;
  return {
    id,
    state: 'active',
    status,
    image: 'img',
    createdAt: new Date(created).toISOString(),
    readyAt: new Date(created).toISOString(),
    expiresAt: new Date(created + 30 * 60_000).toISOString(),
    destroyedAt: null,
    destroyReason: null,
    failureMessage: null,
    snapshotOnDestroy: false,
    finalSnapshotId: null,
    network: { egress: 'none' },
    networkRefused: 0,
    metadata: {},
  };
}

const ACCOUNT: Account = {
  id: 'acct_1',
  email: 'a@example.test',
  usage: { sandboxHours: { used: 1.256, limit: 20 }, concurrentSandboxes: { active: 2, limit: 3 }, snapshotStorage: { usedBytes: 0, limitBytes: 5368709120 } },
  period: { start: '2026-01-01T00:00:00Z', end: '2026-02-01T00:00:00Z' },
};

/** An API fake that records calls; sessions can be changed between refreshes. */
function fakeApi(initial: Sandbox[]) {
  const calls: string[] = [];
  let sessions = [...initial];
  let createError: Error | undefined;
  let fileContent = 'print("hi")\n';
  let previewsError: Error | undefined;
  let snapshotError: Error | undefined;
  let snapshots: Snapshot[] = [
    { id: 'snap_old', name: 'half done', sandboxId: 'sbx_gone', image: 'img', status: 'failed', failureCode: 'operation_timed_out', sizeBytes: 0, files: 0, createdAt: '2026-01-01T11:00:00Z', expiresAt: '2026-01-08T11:00:00Z' },
  ];
  const api: PickerApi = {
    listSandboxes: async () => {
      calls.push('list');
      return sessions;
    },
    account: async () => ACCOUNT,
    createSandbox: async (input: { snapshot?: string } = {}) => {
      calls.push(input.snapshot ? `create from ${input.snapshot}` : 'create');
      if (createError) throw createError;
      const s = sandbox(`sbx_new${sessions.length}`, 0, 'pending');
      sessions = [s, ...sessions];
      return s;
    },
    destroySandbox: async (id: string) => {
      calls.push(`destroy ${id}`);
      sessions = sessions.filter((s) => s.id !== id);
      return { ...sandbox(id, 0), state: 'destroyed', status: 'terminating' };
    },
    execStream: async function* (id: string, body: { command: string | string[] }): AsyncGenerator<ExecStreamEvent, void, undefined> {
      calls.push(`exec ${id} ${String(body.command)}`);
      yield { type: 'stdout', data: 'hel' };
      yield { type: 'stdout', data: 'lo\n' };
      yield { type: 'stderr', data: 'warn\n' };
      yield { type: 'exit', exitCode: 0, signal: null, timedOut: false, durationMs: 5, stdoutTruncated: false, stderrTruncated: false };
    },
    listDir: async (id: string, path?: string) => {
      calls.push(`ls ${id} ${path}`);
      if (path === '/workspace/src') {
        return { path, entries: [{ name: 'main.py', type: 'file', size: 12, modifiedAt: '2026-01-01T00:00:00Z' }], truncated: false };
      }
      return {
        path: '/workspace',
        entries: [
          { name: 'notes.txt', type: 'file', size: 6, modifiedAt: '2026-01-01T00:00:00Z' },
          { name: 'src', type: 'dir', size: 4096, modifiedAt: '2026-01-01T00:00:00Z' },
        ],
        truncated: false,
      };
    },
    viewFile: async (_id: string, input: { path: string }) => ({
      path: input.path,
      content: fileContent,
      encoding: 'utf-8',
      startLine: 1,
      endLine: fileContent.split('\n').length - 1,
      totalLines: fileContent.split('\n').length - 1,
      truncated: false,
      size: Buffer.byteLength(fileContent),
    }),
    createSnapshot: async (id: string) => {
      calls.push(`snapshot ${id}`);
      if (snapshotError) throw snapshotError;
      const s = { id: `snap_${snapshots.length}`, name: null, sandboxId: id, image: 'img', status: 'ready', failureCode: null, sizeBytes: 2048, files: 3, createdAt: '2026-01-01T12:00:00Z', expiresAt: '2026-01-08T12:00:00Z' } as const;
      snapshots = [s, ...snapshots];
      return s;
    },
    listSnapshots: async () => {
      calls.push('snapshots');
      return snapshots;
    },
    listPreviews: async (id: string) => {
      calls.push(`previews ${id}`);
      if (previewsError) throw previewsError;
      return id === 'sbx_one'
        ? [
            { port: 3000, url: 'http://3000-one.localhost:8787/', public: true, expiresAt: '2026-01-01T13:00:00Z' },
            { port: 8000, url: 'http://8000-one.localhost:8787/', public: false, expiresAt: '2026-01-01T13:00:00Z' },
          ]
        : [];
    },
  } as PickerApi;
  return {
    api,
    calls,
    failCreateWith: (e: Error) => {
      createError = e;
    },
    setFileContent: (content: string) => {
      fileContent = content;
    },
    failPreviewsWith: (e: Error) => {
      previewsError = e;
    },
    failSnapshotWith: (e: Error) => {
      snapshotError = e;
    },
  };
}

/** From the list, with sbx_one on it: its actions, then "Run a command". */
async function openExecPanel(lastFrame: () => string | undefined, stdin: { write: (data: string) => void }): Promise<void> {
  await frameWhere(lastFrame, (x) => x.includes('sbx_one'), 'the list');
  stdin.write(ENTER);
  await frameWhere(lastFrame, (x) => x.includes('> Open a shell'), 'the actions');
  stdin.write(DOWN);
  await frameWhere(lastFrame, (x) => x.includes('> Run a command'), 'run chosen');
  stdin.write(ENTER);
  await frameWhere(lastFrame, (x) => x.includes('Run a command in sbx_one'), 'the exec panel');
}

/** From the list, with sbx_one on it: its actions, then "Browse files". */
async function openFileBrowser(lastFrame: () => string | undefined, stdin: { write: (data: string) => void }): Promise<void> {
  await frameWhere(lastFrame, (x) => x.includes('sbx_one'), 'the list');
  stdin.write(ENTER);
  await frameWhere(lastFrame, (x) => x.includes('> Open a shell'), 'the actions');
  stdin.write(DOWN);
  stdin.write(DOWN);
  await frameWhere(lastFrame, (x) => x.includes('> Browse files'), 'browse chosen');
  stdin.write(ENTER);
}

/** Waits until the last frame satisfies `check` (Ink renders asynchronously). */
async function frameWhere(lastFrame: () => string | undefined, check: (f: string) => boolean, what: string): Promise<string> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const f = lastFrame() ?? '';
    if (check(f)) return f;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last frame:\n${f}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const tick = () => new Promise((r) => setTimeout(r, 50));

test('SessionTable shows id, status, age and the time left to the cap, with the chosen row marked', () => {
  const { lastFrame } = render(h(SessionTable, { sessions: [sandbox('sbx_aaa', 65), sandbox('sbx_bbb', 600, 'pending')], selected: 1, now: T0 }));
  const lines = (lastFrame() ?? '').split('\n');
  assert.match(lines[0]!, /ID +STATUS +AGE +TIME LEFT/);
  assert.match(lines[1]!, /^ {2}sbx_aaa +running +1m05s +28:55$/);
  assert.match(lines[2]!, /^> sbx_bbb +pending +10m00s +20:00$/);
});

test('SessionTable with no sessions says how to create one', () => {
  const { lastFrame } = render(h(SessionTable, { sessions: [], selected: 0, now: T0 }));
  assert.match(lastFrame() ?? '', /No active sessions\. Press n to create one\./);
});

test('QuotaFooter shows the sandbox-hours and the concurrent sandboxes', () => {
  const { lastFrame } = render(h(QuotaFooter, { account: ACCOUNT, keys: 'q quit' }));
  assert.match(lastFrame() ?? '', /1\.26\/20 sandbox-hours this month · 2\/3 concurrent sandboxes/);
  assert.match(lastFrame() ?? '', /q quit/);
});

test('ActionMenu moves with the arrows and chooses with enter; esc goes back', async () => {
  const chosen: string[] = [];
  const { lastFrame, stdin } = render(h(ActionMenu, { sessionId: 'sbx_x', onChoose: (a: string) => chosen.push(a) }));
  assert.match(lastFrame() ?? '', /> Open a shell/);
  await tick();
  stdin.write(DOWN);
  await frameWhere(lastFrame, (f) => /> Run a command/.test(f), 'the second action');
  stdin.write(DOWN);
  await frameWhere(lastFrame, (f) => /> Browse files/.test(f), 'the third action');
  stdin.write(DOWN);
  await frameWhere(lastFrame, (f) => /> Snapshot its workspace/.test(f), 'the fourth action');
  stdin.write(DOWN);
  await frameWhere(lastFrame, (f) => /> Destroy/.test(f), 'the fifth action');
  stdin.write(ENTER);
  await tick();
  stdin.write(ESC);
  await tick();
  assert.deepEqual(chosen, ['destroy', 'back']);
});

test('ConfirmDestroy: y confirms, any other key cancels', async () => {
  const answers: boolean[] = [];
  const { lastFrame, stdin } = render(h(ConfirmDestroy, { sessionId: 'sbx_x', onAnswer: (y: boolean) => answers.push(y) }));
  assert.match(lastFrame() ?? '', /Destroy session sbx_x\?/);
  await tick();
  stdin.write('n');
  await tick();
  stdin.write('y');
  await tick();
  assert.deepEqual(answers, [false, true]);
});

test('addOutput continues a line across chunks and keeps the streams apart', () => {
  let lines = addOutput([], 'stdout', 'hel');
  lines = addOutput(lines, 'stdout', 'lo\nwor');
  lines = addOutput(lines, 'stderr', 'oops\n');
  lines = addOutput(lines, 'stdout', 'ld\n');
  assert.deepEqual(
    lines.map((l) => `${l.stream}:${l.text}`),
    ['stdout:hello', 'stdout:wor', 'stderr:oops', 'stdout:ld'],
  );
});

test('Picker: lists sessions with the quota, moves with the arrows, creates with n, refreshes with r', async () => {
  const fake = fakeApi([sandbox('sbx_one', 120), sandbox('sbx_two', 60)]);
  const { lastFrame, stdin } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  let f = await frameWhere(lastFrame, (x) => x.includes('sbx_two') && x.includes('sandbox-hours'), 'the sessions and quota');
  assert.match(f, /> sbx_one +running +2m00s +28:00/);
  assert.match(f, /2\/3 concurrent sandboxes/);

  stdin.write(DOWN);
  f = await frameWhere(lastFrame, (x) => /> sbx_two/.test(x), 'the cursor on the second row');
  stdin.write(UP);
  await frameWhere(lastFrame, (x) => /> sbx_one/.test(x), 'the cursor back on the first row');

  stdin.write('n');
  f = await frameWhere(lastFrame, (x) => /> sbx_new2 +pending/.test(x), 'the new session, chosen');
  assert.match(f, /Created sbx_new2; it is starting\./);
  assert.ok(fake.calls.includes('create'));

  const before = fake.calls.filter((c) => c === 'list').length;
  stdin.write('r');
  await frameWhere(lastFrame, () => fake.calls.filter((c) => c === 'list').length > before, 'a refresh');
});

test('Picker: an API error is shown with its code and hint, and the picker keeps running', async () => {
  const fake = fakeApi([sandbox('sbx_one', 10)]);
  fake.failCreateWith(new PaddockApiError({ status: 429, code: 'concurrent_sandbox_limit_reached', detail: '3 of 3 concurrent sandboxes are active.' }));
  const { lastFrame, stdin } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  await frameWhere(lastFrame, (x) => x.includes('sbx_one'), 'the list');
  stdin.write('n');
  const f = await frameWhere(lastFrame, (x) => x.includes('concurrent_sandbox_limit_reached'), 'the error');
  assert.match(f, /3 of 3 concurrent sandboxes are active\. \[concurrent_sandbox_limit_reached\]/);
  assert.match(f, /Destroy a session/);
  stdin.write(DOWN);
  assert.match(await frameWhere(lastFrame, (x) => x.includes('> sbx_one'), 'still working'), /n new/);
});

test('Picker: enter opens the actions; run a command and see its output', async () => {
  const fake = fakeApi([sandbox('sbx_one', 10)]);
  const { lastFrame, stdin } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  await openExecPanel(lastFrame, stdin);
  stdin.write('echo hello');
  await frameWhere(lastFrame, (x) => x.includes('echo hello'), 'the typed command');
  stdin.write(ENTER);
  const f = await frameWhere(lastFrame, (x) => x.includes('[exit 0'), 'the exit');
  assert.match(f, /\$ echo hello/);
  assert.match(f, /│ hello +│/);
  assert.match(f, /│ warn +│/);
  assert.ok(fake.calls.includes('exec sbx_one echo hello'));
  stdin.write(ESC);
  await frameWhere(lastFrame, (x) => x.includes('> sbx_one') && x.includes('n new'), 'back on the list');
});

test("Picker: a file's control characters are shown, not obeyed, and a long line takes one row", async () => {
  const fake = fakeApi([sandbox('sbx_one', 10)]);
  fake.setFileContent(`title \u001b]0;pwned\u0007 clear \u001b[2J csi \u009b31m end\n${'x'.repeat(300)}\nlast\n`);
  const { lastFrame, stdin } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  await openFileBrowser(lastFrame, stdin);
  await frameWhere(lastFrame, (x) => x.includes('> notes.txt') || x.includes('notes.txt'), 'the folder');
  stdin.write(DOWN);
  await frameWhere(lastFrame, (x) => x.includes('> notes.txt'), 'the file chosen');
  stdin.write(ENTER);
  const f = await frameWhere(lastFrame, (x) => x.includes('last'), 'the file');
  assert.match(f, /title \^\[\]0;pwned\^G clear \^\[\[2J csi \uFFFD31m end/);
  assert.doesNotMatch(f.replace(/\u001b\[[0-9;]*m/g, ''), /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, 'no control character reaches the terminal');
  assert.match(f, /\(3 lines,/);
  for (const line of f.split('\n')) assert.ok(line.length <= 100, `a row of ${line.length}: ${line.slice(0, 40)}…`);
});

test('Picker: a list that cannot be loaded says so, not "no sessions", and the quota is unavailable, not loading', async () => {
  const fake = fakeApi([]);
  const down = new PaddockConnectionError('http://127.0.0.1:9', 'Could not reach http://127.0.0.1:9: ECONNREFUSED.');
  fake.api.listSandboxes = async () => {
    throw down;
  };
  fake.api.account = async () => {
    throw down;
  };
  const { lastFrame } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  const f = await frameWhere(lastFrame, (x) => x.includes('ECONNREFUSED'), 'the error');
  assert.match(f, /could not be loaded \(r tries again\)/);
  assert.doesNotMatch(f, /No active sessions/);
  assert.match(f, /quota: unavailable/);
  assert.doesNotMatch(f, /loading/);
});

test('Picker: a command line pasted with its Enter in one chunk runs, without the line break', async () => {
  const fake = fakeApi([sandbox('sbx_one', 10)]);
  const { lastFrame, stdin } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  await openExecPanel(lastFrame, stdin);
  stdin.write('echo pasted\r');
  await frameWhere(lastFrame, (x) => x.includes('[exit 0') && x.includes('a shell command line'), 'the exit, and the prompt again');
  assert.ok(fake.calls.includes('exec sbx_one echo pasted'), fake.calls.join('\n'));
  // The field's key listener is attached in an effect, after the frame that shows it.
  await new Promise((r) => setTimeout(r, 100));
  stdin.write('echo one\r\necho two\r');
  await frameWhere(lastFrame, () => fake.calls.some((c) => c.startsWith('exec sbx_one echo one')), 'the second run');
  assert.ok(fake.calls.includes('exec sbx_one echo one\necho two'), fake.calls.join('\n'));
});

test('Picker: browse files, open a folder and a file, go back up', async () => {
  const fake = fakeApi([sandbox('sbx_one', 10)]);
  const { lastFrame, stdin } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  await openFileBrowser(lastFrame, stdin);
  let f = await frameWhere(lastFrame, (x) => x.includes('sbx_one:/workspace') && x.includes('notes.txt'), 'the folder');
  assert.match(f, /> src\//, 'folders first');
  stdin.write(ENTER);
  f = await frameWhere(lastFrame, (x) => x.includes('sbx_one:/workspace/src'), 'the sub-folder');
  assert.match(f, /> main\.py +12 B/);
  stdin.write(ENTER);
  f = await frameWhere(lastFrame, (x) => x.includes('print("hi")'), 'the file');
  assert.match(f, /\/workspace\/src\/main\.py +\(1 line, 12 B\)/);
  stdin.write(ESC);
  await frameWhere(lastFrame, (x) => x.includes('> main.py'), 'back to the folder');
  stdin.write('\u001B[D'); // left: up a folder
  await frameWhere(lastFrame, (x) => x.includes('sbx_one:/workspace\n') || /sbx_one:\/workspace\s*$/m.test(x), 'the parent folder');
});

test('Picker: destroy asks for confirmation; n keeps it, y destroys', async () => {
  const fake = fakeApi([sandbox('sbx_one', 10)]);
  const { lastFrame, stdin } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  await frameWhere(lastFrame, (x) => x.includes('sbx_one'), 'the list');
  const openDestroy = async () => {
    stdin.write(ENTER);
    await frameWhere(lastFrame, (x) => x.includes('> Open a shell'), 'the actions');
    for (let i = 0; i < 4; i++) stdin.write(DOWN);
    await frameWhere(lastFrame, (x) => x.includes('> Destroy'), 'destroy chosen');
    stdin.write(ENTER);
    await frameWhere(lastFrame, (x) => x.includes('Destroy session sbx_one?'), 'the confirmation');
  };
  await openDestroy();
  stdin.write('n');
  await frameWhere(lastFrame, (x) => x.includes('Not destroyed.'), 'cancelled');
  assert.ok(!fake.calls.some((c) => c.startsWith('destroy')));
  await openDestroy();
  stdin.write('y');
  await frameWhere(lastFrame, (x) => x.includes('Destroying sbx_one.'), 'destroyed');
  assert.ok(fake.calls.includes('destroy sbx_one'));
  await frameWhere(lastFrame, (x) => x.includes('No active sessions'), 'the list without it');
});

test("Picker: a session's actions show its previews' ports and URLs, none, or why they could not be loaded", async () => {
  const fake = fakeApi([sandbox('sbx_one', 10), sandbox('sbx_two', 20)]);
  const { lastFrame, stdin } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  await frameWhere(lastFrame, (x) => x.includes('sbx_one'), 'the list');
  stdin.write(ENTER);
  const f = await frameWhere(lastFrame, (x) => x.includes('> Open a shell') && x.includes('Previews'), 'the previews');
  assert.match(f, /^ {2}3000 +public +http:\/\/3000-one\.localhost:8787\/$/m);
  assert.match(f, /^ {2}8000 +private +http:\/\/8000-one\.localhost:8787\/$/m);
  assert.ok(fake.calls.includes('previews sbx_one'));
  stdin.write(ESC);
  await frameWhere(lastFrame, (x) => x.includes('n new'), 'back on the list');
  stdin.write(DOWN);
  await frameWhere(lastFrame, (x) => x.includes('> sbx_two'), 'the second session');
  stdin.write(ENTER);
  await frameWhere(lastFrame, (x) => /No previews \(`paddock preview <port>` makes one\)\./.test(x), 'no previews');
  stdin.write(ESC);
  await frameWhere(lastFrame, (x) => x.includes('n new'), 'back on the list again');
  fake.failPreviewsWith(new PaddockConnectionError('http://127.0.0.1:1', 'Could not reach http://127.0.0.1:1: ECONNREFUSED.'));
  stdin.write(ENTER);
  const failed = await frameWhere(lastFrame, (x) => x.includes('Previews could not be loaded'), 'the error');
  assert.match(failed, /> Open a shell/, 'the actions still work');
});

test('Picker: a session\'s workspace is snapshotted from its actions; s lists the snapshots and starts a session from a ready one, never from a failed one', async () => {
  const fake = fakeApi([sandbox('sbx_one', 10)]);
  const { lastFrame, stdin } = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  await frameWhere(lastFrame, (x) => x.includes('sbx_one'), 'the list');
  const chooseSnapshot = async () => {
    stdin.write(ENTER);
    await frameWhere(lastFrame, (x) => x.includes('> Open a shell'), 'the actions');
    for (let i = 0; i < 3; i++) stdin.write(DOWN);
    await frameWhere(lastFrame, (x) => x.includes('> Snapshot its workspace'), 'snapshot chosen');
    stdin.write(ENTER);
  };
  await chooseSnapshot();
  await frameWhere(lastFrame, (x) => x.includes('Snapshot snap_1 taken (2 KiB); s starts a session from it.'), 'the snapshot taken');
  assert.ok(fake.calls.includes('snapshot sbx_one'));
  fake.failSnapshotWith(new PaddockApiError({ status: 429, code: 'snapshot_storage_limit_reached', detail: 'The account stores 5 GiB of snapshots already.' }));
  await chooseSnapshot();
  await frameWhere(lastFrame, (x) => x.includes('snapshot_storage_limit_reached'), 'the refusal');
  assert.match(lastFrame() ?? '', /sbx_one/, 'the picker keeps running');

  stdin.write('s');
  await frameWhere(lastFrame, (x) => x.includes('Start a session from a snapshot') && x.includes('snap_old'), 'the snapshots');
  assert.match(lastFrame() ?? '', /> snap_1 +- +ready +2 KiB +from sbx_one/);
  // The failed one is shown, and enter on it does nothing.
  stdin.write(DOWN);
  await frameWhere(lastFrame, (x) => /> snap_old +half done +failed/.test(x), 'the failed one chosen');
  stdin.write(ENTER);
  await tick();
  assert.ok(!fake.calls.some((c) => c.startsWith('create')));
  stdin.write(UP);
  await frameWhere(lastFrame, (x) => x.includes('> snap_1'), 'the ready one chosen');
  stdin.write(ENTER);
  await frameWhere(lastFrame, (x) => x.includes('from snap_1; it is starting.'), 'the session created');
  assert.ok(fake.calls.includes('create from snap_1'));
  stdin.write('s');
  await frameWhere(lastFrame, (x) => x.includes('Start a session from a snapshot'), 'the snapshots again');
  stdin.write(ESC);
  await frameWhere(lastFrame, (x) => x.includes('s new from a snapshot'), 'back at the list');
});

test('Picker: q quits', async () => {
  const fake = fakeApi([]);
  const instance = render(h(Picker, { api: fake.api, refreshMs: 60_000, clock: () => T0 }));
  await frameWhere(instance.lastFrame, (x) => x.includes('No active sessions'), 'the empty list');
  let exited = false;
  // ink-testing-library has no waitUntilExit: an exited app stops answering keys, so check that.
  instance.stdin.write('q');
  await tick();
  const framesAfterQuit = instance.frames.length;
  instance.stdin.write('n');
  await tick();
  exited = !fake.calls.includes('create');
  assert.ok(exited, 'after q, keys do nothing');
  assert.equal(instance.frames.length, framesAfterQuit);
});
