import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { startDeployment } from '../helpers/deployment.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount, type TestAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { openStream, within } from '../helpers/streams.ts';

// A revoked key ends every request it has open before its DELETE answers, on every replica: its
// terminals, event streams, followed output and running commands. Through two API instances (two
// real `web` processes with PADDOCK_TEST_DEPLOYMENT=replicas), on the runtime under test. What is
// made after the 204 (keystrokes, output, events) must never reach the revoked key's holder, and
// each of its connections must end.

const deployment = await startDeployment({
  apis: 2,
  overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '10', PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '100000' },
});
const [one, two] = deployment.apiUrls as [string, string];

interface Terminal {
  output(): string;
  type(text: string): void;
  closed: Promise<{ code: number; reason: string }>;
}

function openTerminal(url: string, path: string, key?: string): Promise<Terminal> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${path}`, 'paddock.terminal.v1', { headers: key ? { authorization: `Bearer ${key}` } : {} });
  let text = '';
  ws.on('message', (data: Buffer) => {
    if (data[0] === 1) text += data.subarray(1).toString();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  return new Promise((resolve, reject) => {
    ws.once('open', () =>
      resolve({
        output: () => text,
        // A keystroke sent once the server has closed is lost here, as it must be there.
        type: (t) => ws.send(Buffer.concat([Buffer.of(0), Buffer.from(t)]), () => undefined),
        closed,
      }),
    );
    ws.once('unexpected-response', (_req, res) => reject(new Error(`the terminal was refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

async function secondKey(account: TestAccount, url: string): Promise<string> {
  const res = await call(url, 'POST', '/v1/api-keys', { token: account.token, body: { name: 'other' } });
  assert.equal(res.status, 201);
  return res.body.key as string;
}

interface Opened {
  sandboxId: string;
  procId: string;
  terminal: Terminal;
  events: Awaited<ReturnType<typeof openStream>>;
  followed: Awaited<ReturnType<typeof openStream>>;
}

/**
 * With the account's key `a.key`, on `url`: a background process that echoes its standard input
 * (followed), the account's event stream, and a terminal (by ticket, or with the key), each shown
 * to work with the second key's help.
 */
async function openEverything(url: string, a: TestAccount, other: string, byTicket: boolean): Promise<Opened> {
  const created = await createSandbox(url, a.key);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const sandboxId = created.body.id as string;
  const started = await call(url, 'POST', `/v1/sandboxes/${sandboxId}/exec`, {
    token: a.key,
    body: { command: ['sh', '-c', 'while read -r l; do echo "got-$l"; done'], background: true },
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const procId = started.body.id as string;
  // A followed output answers its headers with its first line: the process has one to show.
  assert.equal((await call(url, 'POST', `/v1/sandboxes/${sandboxId}/processes/${procId}/stdin`, { token: other, body: { data: 'before\n' } })).status, 204);
  const followed = await openStream(url, `/v1/sandboxes/${sandboxId}/processes/${procId}/output?follow=true`, a.key, 'application/x-ndjson');
  const events = await openStream(url, '/v1/events', a.key, 'text/event-stream');
  let terminal: Terminal;
  if (byTicket) {
    const ticket = await call(url, 'POST', `/v1/sandboxes/${sandboxId}/terminal/tickets`, { token: a.key });
    assert.equal(ticket.status, 201);
    terminal = await openTerminal(url, `/v1/sandboxes/${sandboxId}/terminal?command=sh&ticket=${ticket.body.ticket}`);
  } else {
    terminal = await openTerminal(url, `/v1/sandboxes/${sandboxId}/terminal?command=sh`, a.key);
  }
  // Each works: a line through the process, a command in the terminal, an event.
  terminal.type('echo BEFORE-$((6*7))\n');
  const early = (await createSandbox(url, other)).body.id as string;
  await eventually('everything live', 15_000, async () =>
    followed.text().includes('got-before') && /BEFORE-42/.test(terminal.output()) && events.text().includes(early) ? true : undefined,
  );
  return { sandboxId, procId, terminal, events, followed };
}

/** After the 204: keystrokes, output and events that the revoked key's holder must never see. */
async function makeMoreAndCheck(url: string, a: TestAccount, other: string, o: Opened): Promise<void> {
  o.terminal.type('echo AFTER-$((6*7)); touch /workspace/typed-after\n');
  assert.equal((await call(url, 'POST', `/v1/sandboxes/${o.sandboxId}/processes/${o.procId}/stdin`, { token: other, body: { data: 'after\n' } })).status, 204);
  const late = (await createSandbox(url, other)).body.id as string;

  // Every connection ends, each in its way.
  assert.deepEqual(await within('the terminal closing', 5000, o.terminal.closed), { code: 4003, reason: 'the API key was revoked' });
  assert.equal(await within('the event stream ending', 5000, o.events.ended), 'ended');
  assert.equal(await within('the followed output ending', 5000, o.followed.ended), 'ended');
  const last = o.followed.text().trimEnd().split('\n').at(-1)!;
  assert.deepEqual(JSON.parse(last), { type: 'error', code: 'invalid_credential', detail: 'The API key was revoked.' });

  // What came after the revocation went nowhere, though it was made: the process took the line,
  // the event was recorded, and the typed command never ran.
  const kept = await call(url, 'GET', `/v1/sandboxes/${o.sandboxId}/processes/${o.procId}/output`, { token: other });
  assert.match(JSON.stringify(kept.body), /got-after/);
  assert.ok(!o.followed.text().includes('got-after'), o.followed.text());
  const recorded = await call(url, 'GET', '/v1/events', { token: other });
  assert.ok(JSON.stringify(recorded.body).includes(late));
  assert.ok(!o.events.text().includes(late), 'no event recorded after the revocation reached its stream');
  assert.doesNotMatch(o.terminal.output(), /AFTER-42/);
  const typed = await call(url, 'POST', `/v1/sandboxes/${o.sandboxId}/exec`, { token: other, body: { command: 'test -e /workspace/typed-after && echo ran || echo never' } });
  assert.equal(typed.body.stdout, 'never\n');
  assertProblem(await call(url, 'GET', '/v1/account', { token: a.key }), 401, 'invalid_credential');
}

test("a revoked key's terminal, event stream, followed output and running command end before its DELETE answers; nothing made after it reaches them", async () => {
  const a = await newAccount(one, 'revoked');
  const other = await secondKey(a, one);
  const opened = await openEverything(one, a, other, false);
  // A buffered exec in progress: its command is stopped and it answers 401, not its output.
  const running = call(one, 'POST', `/v1/sandboxes/${opened.sandboxId}/exec`, { token: a.key, body: { command: 'sleep 30; echo finished' } });
  await sleep(300);

  assert.equal((await call(one, 'DELETE', `/v1/api-keys/${a.keyId}`, { token: a.token })).status, 204);
  await makeMoreAndCheck(one, a, other, opened);
  const exec = await within('the running exec answering', 5000, running);
  assertProblem(exec, 401, 'invalid_credential');
});

test('the revocation reaches the requests another replica holds, a terminal opened with a ticket among them, before it answers', async () => {
  const a = await newAccount(one, 'replicas');
  const other = await secondKey(a, one);
  // Everything on the second instance; the DELETE on the first, which holds none of it.
  const opened = await openEverything(two, a, other, true);
  // A ticket minted before the revocation opens nothing after it.
  const ticket = await call(two, 'POST', `/v1/sandboxes/${opened.sandboxId}/terminal/tickets`, { token: a.key });
  assert.equal(ticket.status, 201);

  assert.equal((await call(one, 'DELETE', `/v1/api-keys/${a.keyId}`, { token: a.token })).status, 204);
  await makeMoreAndCheck(two, a, other, opened);
  await assert.rejects(openTerminal(two, `/v1/sandboxes/${opened.sandboxId}/terminal?command=sh&ticket=${ticket.body.ticket}`), /refused: 401/);
});

test('a DELETE of a key with nothing open answers without waiting out a lease; another key of the account keeps its requests', async () => {
  const a = await newAccount(one, 'idle');
  const other = await secondKey(a, one);
  const kept = await openStream(two, '/v1/events', other, 'text/event-stream');
  // Its last request is over: the replica that served it takes its mark off the key at its next check.
  assert.equal((await call(two, 'GET', '/v1/account', { token: a.key })).status, 200);
  await sleep(1000);
  const started = performance.now();
  assert.equal((await call(one, 'DELETE', `/v1/api-keys/${a.keyId}`, { token: a.token })).status, 204);
  assert.ok(performance.now() - started < 1000, `took ${Math.round(performance.now() - started)} ms`);
  const s = (await createSandbox(one, other)).body.id as string;
  await eventually('the other key still streams', 10_000, async () => (kept.text().includes(s) ? true : undefined));
});
