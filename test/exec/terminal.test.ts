import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import WebSocket from 'ws';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';

// The terminal through its WebSocket, on the runtime under test (npm test runs both): a real
// client speaking paddock.terminal.v1 to a real API, real sandboxes behind it.

const logLines: string[] = [];
const stack = await startSandboxStack({
  logLines,
  overrides: {
    PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '6',
    PADDOCK_TERMINAL_IDLE_SECONDS: '3',
    PADDOCK_TERMINAL_TICKET_SECONDS: '4',
    PADDOCK_INFLIGHT_TERMINAL_PER_SANDBOX: '2',
  },
});

const SUBPROTOCOL = 'paddock.terminal.v1';

interface Terminal {
  ws: WebSocket;
  output(): string;
  /** The exit control frame, when one came. */
  exit(): { exitCode: number | null; signal: string | null } | undefined;
  closed: Promise<{ code: number; reason: string }>;
  type(text: string): void;
  resize(cols: number, rows: number): void;
}

type Refused = { status: number; headers: Headers; body: any };

/** Opens a terminal, or answers the problem document that refused the upgrade. */
async function connect(path: string, options: { key?: string; protocol?: string } = {}): Promise<Terminal | Refused> {
  const ws = new WebSocket(`${stack.url.replace(/^http/, 'ws')}${path}`, options.protocol ?? SUBPROTOCOL, {
    headers: options.key ? { authorization: `Bearer ${options.key}` } : {},
  });
  let text = '';
  let exit: ReturnType<Terminal['exit']>;
  ws.on('message', (data: Buffer) => {
    if (data[0] === 1) text += data.subarray(1).toString();
    if (data[0] === 3) {
      const control = JSON.parse(data.subarray(1).toString());
      if (control.type === 'exit') exit = { exitCode: control.exitCode, signal: control.signal };
    }
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  return new Promise((resolve, reject) => {
    ws.once('open', () =>
      resolve({
        ws,
        closed,
        output: () => text,
        exit: () => exit,
        type: (t) => ws.send(Buffer.concat([Buffer.of(0), Buffer.from(t)])),
        resize: (cols, rows) => ws.send(Buffer.concat([Buffer.of(3), Buffer.from(JSON.stringify({ type: 'resize', cols, rows }))])),
      }),
    );
    ws.once('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        req.destroy();
        const headers = new Headers(Object.entries(res.headers).map(([k, v]) => [k, String(v)]));
        resolve({ status: res.statusCode ?? 0, headers, body: JSON.parse(body) });
      });
    });
    ws.once('error', reject);
  });
}

function opened(t: Terminal | Refused): Terminal {
  if ('status' in t) assert.fail(`the upgrade was refused: ${t.status} ${JSON.stringify(t.body)}`);
  return t;
}

function refused(t: Terminal | Refused): Refused {
  if (!('status' in t)) {
    t.ws.terminate();
    assert.fail('the upgrade was accepted');
  }
  return t;
}

async function until(check: () => void, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function setup(): Promise<{ a: TestAccount; id: string }> {
  const a = await newAccount(stack.url);
  const s = await createSandbox(stack.url, a.key);
  assert.equal(s.status, 201);
  return { a, id: s.body.id };
}

test('a real terminal: what is typed is echoed, its size is the one asked for, a resize changes it, the exit code ends it', async () => {
  const { a, id } = await setup();
  const t = opened(await connect(`/v1/sandboxes/${id}/terminal?cols=101&rows=33&command=sh`, { key: a.key }));
  assert.equal(t.ws.protocol, SUBPROTOCOL);
  t.type('stty size; tty\n');
  await until(() => assert.match(t.output(), /33 101\r\n\/dev\/pts\/\d+/));
  t.resize(150, 50);
  // The size is set a moment after the resize frame (the kernel then signals the foreground group):
  // asked again until it shows.
  await until(() => {
    t.type('stty size\n');
    assert.match(t.output(), /50 150/);
  });
  t.type('exit 3\n');
  const closed = await t.closed;
  assert.deepEqual(t.exit(), { exitCode: 3, signal: null });
  assert.equal(closed.code, 1000);
});

test('without a command the terminal runs the login shell; command words are argv, run as given', async () => {
  const { a, id } = await setup();
  const login = opened(await connect(`/v1/sandboxes/${id}/terminal`, { key: a.key }));
  login.type('echo "shell=$0 term=$TERM"; shopt -q login_shell && echo LOGIN; exit\n');
  await login.closed;
  assert.match(login.output(), /shell=-?bash term=xterm-256color/);
  assert.match(login.output(), /LOGIN/);
  assert.equal(login.exit()?.exitCode, 0);
  const argv = opened(await connect(`/v1/sandboxes/${id}/terminal?command=printf&command=%5B%25s%5D&command=a%20b`, { key: a.key }));
  await argv.closed;
  assert.equal(argv.output(), '[a b]');
});

test("secrets reach the terminal's environment and are masked in its output", async () => {
  const { a, id } = await setup();
  const value = 'tty-secret-8c1d55e0';
  assert.equal((await call(stack.url, 'POST', '/v1/secrets', { token: a.key, body: { name: 'TTY_TOKEN', value } })).status, 201);
  const t = opened(await connect(`/v1/sandboxes/${id}/terminal?command=sh`, { key: a.key }));
  t.type('echo "[$TTY_TOKEN]"; test "$TTY_TOKEN" = tty-secret-8c1d55e0 && echo same; exit\n');
  await t.closed;
  // The typed line's echo holds the value as typed: what is masked is the command's output.
  assert.match(t.output(), /^(\$ )?\[\*\*\*\]\r$/m);
  assert.match(t.output(), /^same\r$/m);
  assert.ok(!t.output().includes(value), 'not even in the echo of what was typed');
});

test('tickets: single use, short-lived, for their sandbox and key only; other accounts get 404', async () => {
  const { a, id } = await setup();
  const other = await setup();
  const issue = (key: string, sandbox: string) => call(stack.url, 'POST', `/v1/sandboxes/${sandbox}/terminal/tickets`, { token: key });
  const res = await issue(a.key, id);
  assert.equal(res.status, 201);
  assert.deepEqual(Object.keys(res.body).sort(), ['expiresAt', 'ticket']);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const path = (sandbox: string, ticket: string) => `/v1/sandboxes/${sandbox}/terminal?command=true&ticket=${ticket}`;
  const t = opened(await connect(path(id, res.body.ticket)));
  await t.closed;
  assert.equal(t.exit()?.exitCode, 0);
  assertProblem(refused(await connect(path(id, res.body.ticket))), 401, 'invalid_credential');
  // Bound to its sandbox: spent on the wrong one, and refused there.
  const second = await issue(a.key, id);
  const wrongSandbox = (await issue(a.key, (await createSandbox(stack.url, a.key)).body.id)).body.ticket;
  assertProblem(refused(await connect(path(id, wrongSandbox))), 401, 'invalid_credential');
  // Another account: no ticket for a sandbox it cannot see, and no terminal with the key either.
  assertProblem(await issue(other.a.key, id), 404, 'sandbox_not_found');
  assertProblem(refused(await connect(`/v1/sandboxes/${id}/terminal`, { key: other.a.key })), 404, 'sandbox_not_found');
  // Another account's ticket, used on this account's sandbox.
  const theirs = (await issue(other.a.key, other.id)).body.ticket;
  assertProblem(refused(await connect(path(id, theirs))), 401, 'invalid_credential');
  // Expired: the stack's tickets last 4 s (long enough for the first use on a loaded host).
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(second.body.expiresAt) + 500 - Date.now())));
  assertProblem(refused(await connect(path(id, second.body.ticket))), 401, 'invalid_credential');
  assertProblem(refused(await connect(path(id, 'pdt_nonsense'))), 401, 'invalid_credential');
  // A revoked key's ticket dies with it.
  const fresh = (await issue(a.key, id)).body.ticket;
  assert.equal((await call(stack.url, 'DELETE', `/v1/api-keys/${a.keyId}`, { token: a.token })).status, 204);
  assertProblem(refused(await connect(path(id, fresh))), 401, 'invalid_credential');
  assert.ok(!logLines.some((l) => l.includes(res.body.ticket.slice(4))), 'no ticket in the logs');
});

test('a refused upgrade is a problem document: no credential, no upgrade, a wrong subprotocol, no such sandbox', async () => {
  const { a, id } = await setup();
  assertProblem(refused(await connect(`/v1/sandboxes/${id}/terminal`)), 401, 'missing_credential');
  const plain = await call(stack.url, 'GET', `/v1/sandboxes/${id}/terminal`, { token: a.key });
  assertProblem(plain, 426, 'upgrade_required');
  assertProblem(refused(await connect(`/v1/sandboxes/${id}/terminal`, { key: a.key, protocol: 'chat' })), 400, 'invalid_request');
  assertProblem(refused(await connect(`/v1/sandboxes/${id}/terminal?cols=0`, { key: a.key })), 400, 'invalid_request');
  assertProblem(refused(await connect(`/v1/sandboxes/sbx_${'0'.repeat(24)}/terminal`, { key: a.key })), 404, 'sandbox_not_found');
  // Another kind of Upgrade, on another route, is an ordinary request (its body read as ever).
  const h2c = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(new URL('/v1/secrets', stack.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${a.key}`, connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'content-type': 'application/json' },
    });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once('upgrade', () => reject(new Error('upgraded')));
    req.once('error', reject);
    req.end(JSON.stringify({ name: 'H2C_TOKEN', value: 'h2c-value-1' }));
  });
  assert.equal(h2c.status, 201, h2c.body);
});

test('the allowlist: the terminal runs only a program on the list', async () => {
  const { a, id } = await setup();
  const allow = (commands: string[]) => call(stack.url, 'PUT', '/v1/allowlist', { token: a.key, body: { commands } });
  assert.equal((await allow(['ls'])).status, 200);
  const login = refused(await connect(`/v1/sandboxes/${id}/terminal`, { key: a.key }));
  assertProblem(login, 403, 'command_not_allowed');
  assertProblem(refused(await connect(`/v1/sandboxes/${id}/terminal?command=sh`, { key: a.key })), 403, 'command_not_allowed');
  assertProblem(refused(await connect(`/v1/sandboxes/${id}/terminal?command=env&command=sh`, { key: a.key })), 403, 'command_not_allowed');
  const listed = opened(await connect(`/v1/sandboxes/${id}/terminal?command=ls&command=/`, { key: a.key }));
  await listed.closed;
  assert.match(listed.output(), /workspace/);
  assert.equal((await allow(['sh'])).status, 200);
  // A shell of the sandbox's own, under an allowed name, is not the system's.
  for (const path of ['/workspace/sh', 'bin/sh']) {
    const own = refused(await connect(`/v1/sandboxes/${id}/terminal?command=${encodeURIComponent(path)}`, { key: a.key }));
    assertProblem(own, 403, 'command_not_allowed');
  }
  const shell = opened(await connect(`/v1/sandboxes/${id}/terminal`, { key: a.key }));
  shell.type('echo "shell=$0"; exit\n');
  await shell.closed;
  assert.match(shell.output(), /shell=-?sh/, 'bash is not on the list: the login shell is sh');
});

test('a destroyed sandbox closes its terminal with a reason; an idle terminal is closed after the idle limit', async () => {
  const { a, id } = await setup();
  const t = opened(await connect(`/v1/sandboxes/${id}/terminal?command=sh`, { key: a.key }));
  // Busy, so that however long the destroy takes, the idle limit is not what closes it.
  t.type('echo ready; while :; do sleep 0.5; echo tick; done\n');
  await until(() => assert.match(t.output(), /ready/));
  const idle = opened(await connect(`/v1/sandboxes/${(await createSandbox(stack.url, a.key)).body.id}/terminal?command=sh`, { key: a.key }));
  const started = Date.now();
  assert.equal((await call(stack.url, 'DELETE', `/v1/sandboxes/${id}`, { token: a.key })).status, 200);
  const closed = await t.closed;
  assert.equal(closed.code, 4001);
  assert.match(closed.reason, /destroyed \(user\)/);
  const idled = await idle.closed;
  assert.equal(idled.code, 4002);
  assert.match(idled.reason, /idle/);
  assert.ok(Date.now() - started >= 2000, 'not before the limit');
});

test('hostile input: oversized frames, text frames, unknown channels and bad control frames close the connection', async () => {
  const { a, id } = await setup();
  const cases: [Buffer | string, number][] = [
    [Buffer.alloc(65 * 1024, 0), 1009],
    ['hello', 1008],
    [Buffer.of(7, 1, 2), 1008],
    [Buffer.concat([Buffer.of(3), Buffer.from('{"type":"resize","cols":100000,"rows":1}')]), 1008],
    [Buffer.concat([Buffer.of(3), Buffer.from('not json')]), 1008],
  ];
  for (const [frame, code] of cases) {
    const t = opened(await connect(`/v1/sandboxes/${id}/terminal?command=sh`, { key: a.key }));
    t.ws.send(frame);
    assert.equal((await t.closed).code, code, `frame ${String(frame).slice(0, 20)}`);
  }
});

test('a flood of input to a command that does not read is held back in the client, not buffered by the server', async () => {
  const { a, id } = await setup();
  // Raw mode: a terminal in line mode drops what does not fit its line, raw it stops taking input.
  const t = opened(await connect(`/v1/sandboxes/${id}/terminal?command=sh&command=-c&command=stty%20raw%20-echo%3B%20echo%20raw%3B%20sleep%2020`, { key: a.key }));
  await until(() => assert.match(t.output(), /raw/));
  // Small frames, many to one socket read, as keystrokes and pastes come.
  const chunk = Buffer.concat([Buffer.of(0), Buffer.alloc(1024, 0x61)]);
  for (let i = 0; i < 16 * 1024; i++) t.ws.send(chunk); // 16 MiB
  await new Promise((resolve) => setTimeout(resolve, 2000));
  assert.ok(t.ws.bufferedAmount > 4 * 1024 * 1024, `the client still holds most of it (${t.ws.bufferedAmount} bytes)`);
  t.ws.terminate();
  // The terminal is gone with its connection: a new one opens within the per-sandbox cap.
  await until(async () => {
    const next = opened(await connect(`/v1/sandboxes/${id}/terminal?command=true`, { key: a.key }));
    await next.closed;
  });
});

test('open terminals are capped per sandbox (admission control)', async () => {
  const { a, id } = await setup();
  const first = opened(await connect(`/v1/sandboxes/${id}/terminal?command=sh`, { key: a.key }));
  const second = opened(await connect(`/v1/sandboxes/${id}/terminal?command=sh`, { key: a.key }));
  const third = refused(await connect(`/v1/sandboxes/${id}/terminal?command=sh`, { key: a.key }));
  assertProblem(third, 429, 'too_many_in_flight');
  first.ws.close();
  await first.closed;
  await until(async () => {
    const again = opened(await connect(`/v1/sandboxes/${id}/terminal?command=true`, { key: a.key }));
    await again.closed;
  });
  second.ws.close();
});

/** Opens a terminal once the sandbox's cap admits it: the last one's lease goes a moment after its close. */
async function openAdmitted(path: string, key: string): Promise<Terminal> {
  for (let tries = 0; ; tries++) {
    const t = await connect(path, { key });
    if (!('status' in t) || t.status !== 429 || tries >= 50) return opened(t);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('a resize and keystrokes sent as the terminal opens are applied in order once it runs (xterm.js fit sends that resize)', async () => {
  const { a, id } = await setup();
  // Ten times: a resize lost to a race shows within a few tries.
  for (let i = 0; i < 10; i++) {
    const t = await openAdmitted(`/v1/sandboxes/${id}/terminal?cols=80&rows=24&command=sh`, a.key);
    // In the same tick as the open: before the terminal's command has started.
    t.resize(120 + i, 40);
    t.type('stty size; exit\n');
    await t.closed;
    assert.match(t.output(), new RegExp(`^(\\$ )?40 ${120 + i}\\r$`, 'm'), `try ${i}: ${JSON.stringify(t.output())}`);
  }
});

test('several resizes before the terminal runs: the last one wins; keystrokes between them are kept', async () => {
  const { a, id } = await setup();
  for (let i = 0; i < 5; i++) {
    const t = await openAdmitted(`/v1/sandboxes/${id}/terminal?cols=80&rows=24&command=sh`, a.key);
    t.resize(50, 20);
    t.type('echo typed-');
    t.resize(60, 21);
    t.type('$((40+2)); ');
    t.resize(70 + i, 22);
    t.type('stty size; exit\n');
    await t.closed;
    assert.match(t.output(), /^(\$ )?typed-42\r$/m, `try ${i}: ${JSON.stringify(t.output())}`);
    assert.match(t.output(), new RegExp(`^(\\$ )?22 ${70 + i}\\r$`, 'm'), `try ${i}: ${JSON.stringify(t.output())}`);
  }
});
