import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { startTestApi } from '../helpers/stack.ts';
import { uniqueEmail } from '../helpers/config.ts';
import { call } from '../helpers/http.ts';
import { PASSWORD, failsWith, json, ok, runCli, signedUpUser, tempHome } from './cli-helpers.ts';

// The account commands never reach a sandbox: an API alone, so the file runs once.
const stack = await startTestApi({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '3' } });

test('signup creates the account, logs in, creates a key, and saves the base URL and the key (0600)', async () => {
  const home = tempHome();
  const email = uniqueEmail('signup');
  const out = json(await runCli(home, ['signup', '--url', stack.url, '--email', email, '--password-stdin', '--json'], { input: `${PASSWORD}\n` }));
  assert.equal(out.account.email, email);
  assert.match(out.account.id, /^acct_/);
  assert.match(out.apiKey.id, /^key_/);
  assert.equal(out.baseUrl, stack.url);
  assert.match(out.apiKey.start, /^pdk_live_/);

  const path = join(home, 'config', 'paddock', 'config.toml');
  assert.equal(statSync(path).mode & 0o777, 0o600);
  const saved = parse(readFileSync(path, 'utf8'));
  assert.equal(saved.base_url, stack.url);
  assert.match(String(saved.api_key), /^pdk_live_[A-Za-z0-9]+$/);
  assert.ok(!JSON.stringify(out).includes(String(saved.api_key)), 'the raw key stays in the config file');

  // The saved key works, and the login step left a token: the key was made with one.
  const me = await call(stack.url, 'GET', '/v1/account', { token: String(saved.api_key) });
  assert.equal(me.status, 200);
  assert.equal(me.body.email, email);
});

test('signup with --password prints the account on stdout and the rest on stderr', async () => {
  const home = tempHome();
  const email = uniqueEmail('signup');
  const r = await runCli(home, ['signup', '--url', stack.url, '--email', email, '--password', PASSWORD]);
  assert.match(ok(r), new RegExp(`^Signed up as ${email.replace('.', '\\.')} \\(acct_[0-9a-z]+\\)\\.\\n$`));
  assert.match(r.stderr, /API key pdk_live_\w+… \(key_\w+\) and the base URL saved in /);
});

test('signup without a terminal fails at once naming the flag for each missing input', async () => {
  const home = tempHome();
  const noEmail = await runCli(home, ['signup', '--url', stack.url]);
  failsWith(noEmail, 'input_required', 2);
  assert.match(noEmail.stderr, /Hint: Pass --email <email>\./);

  const noPassword = await runCli(home, ['signup', '--url', stack.url, '--email', uniqueEmail('signup')]);
  failsWith(noPassword, 'input_required', 2);
  assert.match(noPassword.stderr, /--password-stdin/);

  const noUrl = await runCli(home, ['signup', '--email', uniqueEmail('signup'), '--password', PASSWORD]);
  failsWith(noUrl, 'input_required', 2);
  assert.match(noUrl.stderr, /Pass --url <base_url>/);
});

test('signup shows the API error code and a hint: an email already taken, a short password', async () => {
  const user = await signedUpUser(stack.url);
  const again = await runCli(tempHome(), ['signup', '--url', stack.url, '--email', user.email, '--password', PASSWORD]);
  failsWith(again, 'email_taken', 1);
  assert.match(again.stderr, /^Hint: /m);

  // The password rule is the CLI's to check, before anything is sent; the help states it.
  const short = await runCli(tempHome(), ['signup', '--url', stack.url, '--email', uniqueEmail(), '--password-stdin'], { input: 'short\n' });
  failsWith(short, 'invalid_password', 2);
  assert.match(short.stderr, /^Error: The password must be at least 10 characters \(it has 5\)\./m);
  assert.match(short.stderr, /Hint: .*--password-stdin/);
  assert.match(ok(await runCli(tempHome(), ['signup', '--help'])), /--password <password> +the password \(at least 10 characters\)/);

  const json = await runCli(tempHome(), ['signup', '--url', stack.url, '--email', user.email, '--password', PASSWORD, '--json']);
  assert.equal(json.code, 1);
  assert.equal(json.stdout, '');
  const err = JSON.parse(json.stderr).error;
  assert.equal(err.code, 'email_taken');
  assert.equal(err.status, 409);
  assert.equal(typeof err.hint, 'string');
  assert.match(err.requestId, /^req_/);
});

test('whoami prints the email, the account id, the sandbox-hours and the concurrent sandboxes', async () => {
  const user = await signedUpUser(stack.url);
  const text = ok(await user.run(['whoami']));
  assert.match(text, new RegExp(`^Email: +${user.email.replace('.', '\\.')}$`, 'm'));
  assert.match(text, /^Account: +acct_[0-9a-z]+$/m);
  assert.match(text, /^Usage: +0\/20 sandbox-hours this month$/m);
  assert.match(text, /^Sandboxes: +0\/3 concurrent$/m);

  const data = json(await user.run(['whoami', '--json']));
  assert.equal(data.email, user.email);
  assert.deepEqual(data.usage.concurrentSandboxes, { active: 0, limit: 3 });
  assert.equal(data.usage.sandboxHours.limit, 20);
});

test('keys ls and keys rm log in with email and password on every run and keep no session', async () => {
  const user = await signedUpUser(stack.url);
  const auth = ['--email', user.email, '--password-stdin'];
  const keys = json(await user.run(['keys', 'ls', ...auth, '--json'], { input: PASSWORD }));
  assert.equal(keys.length, 1);
  assert.match(keys[0].id, /^key_/);
  assert.equal(keys[0].current, true);
  assert.ok(!('key' in keys[0]));

  const table = ok(await user.run(['keys', 'ls', ...auth], { input: PASSWORD }));
  assert.match(table, /^ID +NAME +START +CREATED +LAST USED$/m);
  assert.match(table, new RegExp(`^${keys[0].id} +paddock-cli on .* \\(this CLI\\)`, 'm'));

  // Nothing but the base URL and the key is kept: no token in the config.
  const saved = parse(readFileSync(join(user.home, 'config', 'paddock', 'config.toml'), 'utf8'));
  assert.deepEqual(Object.keys(saved).sort(), ['api_key', 'base_url']);

  // It is the key this CLI uses: without a terminal, only --yes revokes it.
  const refused = await user.run(['keys', 'rm', keys[0].id, ...auth], { input: PASSWORD });
  failsWith(refused, 'confirmation_required', 2);
  assert.match(refused.stderr, new RegExp(`${keys[0].id} \\(.*\\) is the API key this CLI uses`));
  assert.match(refused.stderr, /Hint: Pass --yes/);
  ok(await user.run(['whoami']));

  const rm = await user.run(['keys', 'rm', keys[0].id, '--yes', ...auth], { input: PASSWORD });
  ok(rm);
  assert.match(rm.stderr, new RegExp(`Revoked API key ${keys[0].id}\\. It was the key this CLI uses: \`paddock login\``));
  // The revoked key stops working at once; the CLI says what to do.
  const after = await user.run(['whoami']);
  failsWith(after, 'invalid_credential', 1);
  assert.match(after.stderr, /Hint: .*config set-key/);
  assert.deepEqual(json(await user.run(['keys', 'ls', ...auth, '--json'], { input: PASSWORD })), []);
});

test('keys without a terminal fail at once naming --email, then --password-stdin', async () => {
  const user = await signedUpUser(stack.url);
  const noEmail = await user.run(['keys', 'ls']);
  failsWith(noEmail, 'input_required', 2);
  assert.match(noEmail.stderr, /Pass --email <email>/);
  const noPassword = await user.run(['keys', 'rm', 'key_x', '--email', user.email]);
  failsWith(noPassword, 'input_required', 2);
  assert.match(noPassword.stderr, /Pass --password-stdin/);
});

test('keys with a wrong password show invalid_login', async () => {
  const user = await signedUpUser(stack.url);
  const r = await user.run(['keys', 'ls', '--email', user.email, '--password-stdin'], { input: 'not the password' });
  failsWith(r, 'invalid_login', 1);
  const missing = await user.run(['keys', 'rm', 'key_doesnotexist', '--email', user.email, '--password-stdin'], { input: PASSWORD });
  failsWith(missing, 'api_key_not_found', 1);
});

test('login is the way back in: a new API key, saved with the base URL, after the old one was revoked', async () => {
  const user = await signedUpUser(stack.url);
  const auth = ['--email', user.email, '--password-stdin'];
  const [old] = json(await user.run(['keys', 'ls', ...auth, '--json'], { input: PASSWORD }));
  ok(await user.run(['keys', 'rm', old.id, '--yes', ...auth], { input: PASSWORD }));
  failsWith(await user.run(['whoami']), 'invalid_credential', 1);

  const r = await user.run(['login', ...auth, '--key-name', 'laptop'], { input: PASSWORD });
  assert.match(ok(r), new RegExp(`^Logged in as ${user.email.replace('.', '\\.')} \\(acct_[0-9a-z]+\\)\\.\\n$`));
  assert.match(r.stderr, /New API key pdk_live_\w+… \(key_\w+\) and the base URL saved in /);
  assert.equal(json(await user.run(['whoami', '--json'])).email, user.email);
  const keys = json(await user.run(['keys', 'ls', ...auth, '--json'], { input: PASSWORD }));
  assert.deepEqual(keys.map((k: { name: string; current: boolean }) => [k.name, k.current]), [['laptop', true]]);
  assert.doesNotMatch(r.stderr, /previous key/, 'a revoked key is not mentioned');

  // Logging in again over a working key: it is not revoked (it may be in use elsewhere), but named.
  const again = await user.run(['login', ...auth, '--key-name', 'laptop-2'], { input: PASSWORD });
  ok(again);
  const laptop = keys[0] as { id: string; start: string };
  assert.match(again.stderr, new RegExp(`Your previous key laptop \\(${laptop.start}…, ${laptop.id}\\) still works; .*paddock keys rm ${laptop.id}`));
  assert.equal(json(await user.run(['keys', 'ls', ...auth, '--json'], { input: PASSWORD })).length, 2);

  // On a new machine: --url gives the base URL; a wrong password saves nothing.
  const home = tempHome();
  const wrong = await runCli(home, ['login', '--url', stack.url, ...auth], { input: 'not the password' });
  failsWith(wrong, 'invalid_login', 1);
  assert.equal(json(await runCli(home, ['config', 'show', '--json'])).apiKey, null);
  const fresh = await runCli(home, ['login', '--url', stack.url, ...auth, '--json'], { input: PASSWORD });
  const out = json(fresh);
  assert.equal(out.account.email, user.email);
  assert.equal(out.baseUrl, stack.url);
  const savedKey = String(parse(readFileSync(join(home, 'config', 'paddock', 'config.toml'), 'utf8')).api_key);
  assert.ok(!fresh.stdout.includes(savedKey) && !fresh.stderr.includes(savedKey), 'the raw key stays in the config file');
  assert.equal(json(await runCli(home, ['whoami', '--json'])).email, user.email);

  // Without a terminal, each missing input is named.
  const noEmail = await runCli(tempHome(), ['login', '--url', stack.url]);
  failsWith(noEmail, 'input_required', 2);
  assert.match(noEmail.stderr, /Pass --email <email>/);
});

test('keys create prints the new key once, on stdout only, and saves nothing; another key is revoked without --yes', async () => {
  const user = await signedUpUser(stack.url);
  const auth = ['--email', user.email, '--password-stdin'];
  const configFile = join(user.home, 'config', 'paddock', 'config.toml');
  const before = readFileSync(configFile, 'utf8');
  const r = await user.run(['keys', 'create', '--name', 'ci runner', ...auth], { input: PASSWORD });
  const key = ok(r).trim();
  assert.match(key, /^pdk_live_[A-Za-z0-9]+$/);
  assert.ok(!r.stderr.includes(key), 'the key is on stdout only');
  assert.match(r.stderr, /Created API key key_\w+ \(ci runner\)\. This is the only time it is shown/);
  assert.equal(readFileSync(configFile, 'utf8'), before);
  const me = await call(stack.url, 'GET', '/v1/account', { token: key });
  assert.equal(me.body.email, user.email);

  const listed = json(await user.run(['keys', 'ls', ...auth, '--json'], { input: PASSWORD }));
  const created = listed.find((k: { name: string }) => k.name === 'ci runner');
  assert.equal(created.current, false);
  const withJson = json(await user.run(['keys', 'create', ...auth, '--json'], { input: PASSWORD }));
  assert.match(withJson.key, /^pdk_live_/);
  assert.match(withJson.id, /^key_/);

  // Not the CLI's own key: no confirmation needed.
  const rm = await user.run(['keys', 'rm', created.id, ...auth], { input: PASSWORD });
  ok(rm);
  assert.ok(!rm.stderr.includes('this CLI uses'));
  assert.equal((await call(stack.url, 'GET', '/v1/account', { token: key })).status, 401);
  ok(await user.run(['whoami']));
});

test('config set-key saves a key the service accepts, and refuses a revoked one, keeping the old', async () => {
  const user = await signedUpUser(stack.url);
  const auth = ['--email', user.email, '--password-stdin'];
  const key = ok(await user.run(['keys', 'create', ...auth], { input: PASSWORD })).trim();
  const saved = await user.run(['config', 'set-key'], { input: `${key}\n` });
  ok(saved);
  assert.match(saved.stderr, new RegExp(`saved \\(in .*\\): it belongs to ${user.email.replace('.', '\\.')} \\(acct_`));
  const configFile = join(user.home, 'config', 'paddock', 'config.toml');
  assert.equal(parse(readFileSync(configFile, 'utf8')).api_key, key);

  const other = ok(await user.run(['keys', 'create', ...auth], { input: PASSWORD })).trim();
  const otherId = json(await user.run(['keys', 'ls', ...auth, '--json'], { input: PASSWORD })).find((k: { start: string }) => other.startsWith(k.start)).id;
  ok(await user.run(['keys', 'rm', otherId, ...auth], { input: PASSWORD }));
  const refused = await user.run(['config', 'set-key', other]);
  failsWith(refused, 'invalid_credential', 1);
  assert.match(refused.stderr, /does not accept this API key .*; it was not saved\./);
  assert.equal(parse(readFileSync(configFile, 'utf8')).api_key, key);
});

test('API errors speak the flags of the command that sent them', async () => {
  const user = await signedUpUser(stack.url);
  // body.password, as the login route names it: --password here.
  const long = await user.run(['keys', 'ls', '--email', user.email, '--password-stdin'], { input: 'x'.repeat(1100) });
  failsWith(long, 'invalid_request', 1);
  assert.match(long.stderr, /^Error: --password: /m);
  assert.ok(!long.stderr.includes('body.'), long.stderr);
  assert.match(long.stderr, /Hint: Check the arguments against `paddock keys ls --help`\./);
  const badEmail = await runCli(tempHome(), ['login', '--url', stack.url, '--email', 'not-an-email', '--password-stdin'], { input: PASSWORD });
  failsWith(badEmail, 'invalid_request', 1);
  assert.match(badEmail.stderr, /^Error: --email: /m);
});
