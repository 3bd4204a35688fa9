import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { eventually } from '../helpers/eventually.ts';
import { fetchPreviewUrl } from '../helpers/preview-fetch.ts';
import { failsWith, json, newSession, ok, signedUpUser, tempHome } from './cli-helpers.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

// `paddock exec --background`, `ps`, `logs [-f]` and `kill`, and `preview` of a background server's
// port, through the installed CLI against a real stack.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '5' } });

test('exec --background prints the id at once; ps lists it; logs prints its output; kill ends it', async () => {
  const user = await signedUpUser(stack.url);
  await newSession(user);
  const t0 = Date.now();
  const started = await user.run(['exec', '--background', '--', 'echo hello; echo warn >&2; sleep 60']);
  const id = ok(started).trim();
  assert.match(id, /^proc_[0-9a-z]{24}$/);
  assert.match(started.stderr, /paddock logs -f proc_/);
  assert.ok(Date.now() - t0 < 30_000);

  const table = ok(await user.run(['ps']));
  assert.match(table, /^ID\s+STATUS\s+EXIT\s+AGE\s+COMMAND$/m);
  assert.match(table, new RegExp(`^${id}\\s+running\\s+-\\s+\\S+\\s+echo hello; echo warn >&2; sleep 60$`, 'm'));
  const listed = json(await user.run(['ps', '--json']));
  assert.equal(listed.find((p: any) => p.id === id).status, 'running');

  const logs = await eventually('logs', 10_000, async () => {
    const r = await user.run(['logs', id]);
    return r.stdout === 'hello\n' ? r : undefined;
  });
  assert.equal(logs.code, 0);
  assert.match(logs.stderr, /^warn$/m);

  const killed = await user.run(['kill', '--signal', 'KILL', id]);
  ok(killed);
  assert.match(killed.stderr, /Sent SIGKILL/);
  const after = json(await user.run(['ps', '--json'])).find((p: any) => p.id === id);
  assert.equal(after.status, 'exited');
  assert.equal(after.signal, 'SIGKILL');
  assert.match(ok(await user.run(['ps'])), new RegExp(`^${id}\\s+exited\\s+SIGKILL`, 'm'));
  assert.match((await user.run(['logs', id])).stderr, /has ended \(SIGKILL\)/);
});

test('logs -f follows until the process ends; --json start; bad input is refused', async () => {
  const user = await signedUpUser(stack.url, 'cliproc');
  const session = await newSession(user);
  const started = json(await user.run(['exec', '--background', '--json', '--session', session, '--', 'sh', '-c', 'for i in 1 2 3; do echo "tick $i"; sleep 0.3; done; exit 3']));
  assert.deepEqual(Object.keys(started).sort(), ['command', 'id', 'startedAt']);
  const followed = await user.run(['logs', '-f', '--session', session, started.id]);
  assert.equal(followed.code, 0);
  assert.equal(followed.stdout, 'tick 1\ntick 2\ntick 3\n');
  assert.match(followed.stderr, /has ended \(exit code 3\)/);

  failsWith(await user.run(['kill', `proc_${'0'.repeat(24)}`]), 'process_not_found');
  failsWith(await user.run(['logs', 'proc_../../etc']), 'process_not_found');
  const badSignal = await user.run(['kill', '--signal', 'HUP', started.id]);
  assert.notEqual(badSignal.code, 0);
  assert.match(badSignal.stderr, /TERM or KILL/);
  const withTimeout = await user.run(['exec', '--background', '--timeout', '5', '--', 'sleep 1']);
  assert.notEqual(withTimeout.code, 0);
  assert.match(withTimeout.stderr, /--timeout does not go with --background/);
});

test('preview prints a URL the server answers at; --public needs no token; ls lists it; rm ends it; --open hands the browser a private page', async () => {
  const user = await signedUpUser(stack.url, 'clipreview');
  const session = await newSession(user);
  ok(await user.run(['exec', '--background', '--', 'python3 -m http.server 8000 --bind 127.0.0.1']));
  await eventually('the server in the session', 20_000, async () => {
    const r = await user.run(['exec', '--', 'python3', '-c', "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/', timeout=2)"]);
    return r.code === 0 ? true : undefined;
  });

  // --open: a stand-in opener records what it was given, as xdg-open would be.
  const bin = join(tempHome(), 'bin');
  mkdirSync(bin);
  const seen = join(bin, 'seen');
  writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\necho "$@" > '${seen}.args'\ncat "$1" > '${seen}.page'\n`);
  chmodSync(join(bin, 'xdg-open'), 0o755);
  const made = await user.run(['preview', '8000', '--open'], { env: { PATH: `${bin}:${process.env.PATH}` } });
  const signed = ok(made).trim();
  const token = /X-Paddock-Preview-Token: (pvt_\S+)/.exec(made.stderr)?.[1];
  assert.ok(token, made.stderr);
  const url = `http://8000-${session.slice(4)}.localhost:${new URL(stack.url).port}/`;
  assert.equal(signed, `${url}?paddock_preview_token=${token}`);
  assert.match(made.stderr, /\(private\)/);
  assert.match(made.stderr, /Opened in the browser\./);
  const args = readFileSync(`${seen}.args`, 'utf8');
  assert.ok(!args.includes(token), `the token was on the opener's command line: ${args}`);
  assert.ok(readFileSync(`${seen}.page`, 'utf8').includes(`content="0;url=${signed}"`), 'the page the browser opens goes to the signed URL');

  // The address answers: the signed URL becomes a cookie, the token opens it; nothing else does.
  const first = await fetchPreviewUrl(signed);
  assert.equal(first.status, 303);
  assert.match(String(first.headers['set-cookie']), /^paddock_preview_token=pvt_/);
  const served = await fetchPreviewUrl(url, { 'x-paddock-preview-token': token });
  assert.equal(served.status, 200);
  assert.match(served.body, /Directory listing/);
  assert.equal((await fetchPreviewUrl(url)).status, 401);

  const table = ok(await user.run(['preview', 'ls']));
  assert.match(table, /^PORT\s+ACCESS\s+TOKEN EXPIRES\s+URL$/m);
  assert.match(table, new RegExp(`^8000\\s+private\\s+\\S+\\s+${url.replaceAll('.', '\\.')}$`, 'm'));
  assert.ok(!table.includes(token));

  const pub = json(await user.run(['preview', '8000', '--public', '--json', '--session', session]));
  assert.equal(pub.public, true);
  assert.equal(pub.url, url);
  assert.equal((await fetchPreviewUrl(url)).status, 200);
  assert.deepEqual(json(await user.run(['preview', 'ls', '--json'])).map((p: any) => [p.port, p.public]), [[8000, true]]);

  // No opener: it says so, and the address is printed all the same.
  const unopened = await user.run(['preview', '8000', '--open'], { env: { PATH: bin.replace(/bin$/, 'none') } });
  assert.equal(ok(unopened).trim(), url);
  assert.match(unopened.stderr, /Not opened in a browser: there is no xdg-open/);

  const removed = await user.run(['preview', 'rm', '8000']);
  ok(removed);
  assert.match(removed.stderr, /Removed the preview of port 8000/);
  assert.equal((await fetchPreviewUrl(url)).status, 401);
  assert.equal((await fetchPreviewUrl(url, { 'x-paddock-preview-token': token })).status, 401);
  const none = await user.run(['preview', 'ls']);
  assert.equal(ok(none), '');
  assert.match(none.stderr, /No previews\./);
  failsWith(await user.run(['preview', 'rm', '8000']), 'preview_not_found');

  // Two sessions and no terminal to ask at: the flag to give is named.
  await newSession(user);
  const ambiguous = await user.run(['preview', '8000']);
  failsWith(ambiguous, 'session_required', 2);
  assert.match(ambiguous.stderr, /--session <session_id>/);
});
