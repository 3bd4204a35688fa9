import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { failsWith, json, ok, runCli, tempHome } from './cli-helpers.ts';

// A well-formed key (the server's checksum does not matter to the CLI's config commands).
const KEY = 'pdk_live_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijKLMNOP';

test('config set-url and set-key write TOML at $XDG_CONFIG_HOME/paddock/config.toml with mode 0600', async () => {
  const home = tempHome();
  ok(await runCli(home, ['config', 'set-url', 'https://paddock.example.com/']));
  ok(await runCli(home, ['config', 'set-key', KEY, '--no-verify']));
  const path = join(home, 'config', 'paddock', 'config.toml');
  assert.deepEqual({ ...parse(readFileSync(path, 'utf8')) }, { base_url: 'https://paddock.example.com', api_key: KEY });
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.equal(statSync(join(home, 'config', 'paddock')).mode & 0o077, 0);
});

test('without XDG_CONFIG_HOME the file is ~/.config/paddock/config.toml', async () => {
  const home = tempHome();
  ok(await runCli(home, ['config', 'set-url', 'https://a.example.com'], { env: { XDG_CONFIG_HOME: undefined } }));
  const path = join(home, '.config', 'paddock', 'config.toml');
  assert.equal(parse(readFileSync(path, 'utf8')).base_url, 'https://a.example.com');
  assert.equal(statSync(path).mode & 0o777, 0o600);
});

test('config set-key reads the key from standard input when it is not an argument', async () => {
  const home = tempHome();
  ok(await runCli(home, ['config', 'set-key', '--no-verify'], { input: `${KEY}\n` }));
  const shown = json(await runCli(home, ['config', 'show', '--json']));
  assert.equal(shown.apiKey, 'pdk_live_AbCd…MNOP');
});

test('config set-key checks the key with the service first: with no base URL, or none reachable, it is not saved, and --no-verify is named', async () => {
  const home = tempHome();
  const noUrl = await runCli(home, ['config', 'set-key', KEY]);
  failsWith(noUrl, 'not_configured', 2);
  assert.match(noUrl.stderr, /Hint: .*--no-verify/);

  // A port nothing listens on: taken, then closed again.
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as { port: number }).port;
  await new Promise((done) => server.close(done));
  ok(await runCli(home, ['config', 'set-url', `http://127.0.0.1:${port}`]));
  const offline = await runCli(home, ['config', 'set-key', KEY]);
  failsWith(offline, 'connection_failed', 1);
  assert.match(offline.stderr, /was not saved/);
  assert.match(offline.stderr, /Hint: .*--no-verify/);
  assert.equal(json(await runCli(home, ['config', 'show', '--json'])).apiKey, null);

  const unchecked = ok(await runCli(home, ['config', 'set-key', KEY, '--no-verify']));
  assert.equal(unchecked, '');
  assert.equal(json(await runCli(home, ['config', 'show', '--json'])).apiKey, 'pdk_live_AbCd…MNOP');
});

test('config set-key refuses something that is not a key', async () => {
  const home = tempHome();
  const r = await runCli(home, ['config', 'set-key', 'hunter2']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /not an API key/);
});

test('config show masks the key, and says where each value comes from; the environment overrides the file', async () => {
  const home = tempHome();
  ok(await runCli(home, ['config', 'set-url', 'https://file.example.com']));
  ok(await runCli(home, ['config', 'set-key', KEY, '--no-verify']));

  const text = ok(await runCli(home, ['config', 'show']));
  assert.match(text, /Base URL: +https:\/\/file\.example\.com\n/);
  assert.match(text, /API key: +pdk_live_AbCd…MNOP\n/);
  assert.ok(!text.includes(KEY), 'the whole key must never be shown');

  const other = 'pdk_live_ZZZZ000000000000000000000000000000000000000000009999';
  const env = { PADDOCK_BASE_URL: 'https://env.example.com', PADDOCK_API_KEY: other };
  const shown = json(await runCli(home, ['config', 'show', '--json'], { env }));
  assert.deepEqual(shown, {
    path: join(home, 'config', 'paddock', 'config.toml'),
    baseUrl: 'https://env.example.com',
    baseUrlSource: 'env',
    apiKey: 'pdk_live_ZZZZ…9999',
    apiKeySource: 'env',
  });
});

test('the https rule: config set-url refuses http:// except for localhost and 127.0.0.1, and says why', async () => {
  const home = tempHome();
  for (const url of ['http://paddock.example.com', 'http://127.0.0.2:8080', 'http://localhost.evil.example', 'http://127.0.0.1@evil.example']) {
    const r = await runCli(home, ['config', 'set-url', url]);
    failsWith(r, 'insecure_base_url', 1);
    assert.match(r.stderr, /must not travel in cleartext/);
  }
  ok(await runCli(home, ['config', 'set-url', 'http://localhost:3000']));
  ok(await runCli(home, ['config', 'set-url', 'http://127.0.0.1:3000']));
  assert.equal(json(await runCli(home, ['config', 'show', '--json'])).baseUrl, 'http://127.0.0.1:3000');
});

test('the https rule holds before any request: an edited file or PADDOCK_BASE_URL cannot get round it', async () => {
  // A real server on 127.0.0.2 (loopback, but not an allowed host): it must never be called.
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.end('{}');
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.2', done));
  const port = (server.address() as { port: number }).port;
  try {
    const home = tempHome();
    const dir = join(home, 'config', 'paddock');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.toml'), `base_url = "http://127.0.0.2:${port}"\napi_key = "${KEY}"\n`, { mode: 0o600 });
    const fromFile = await runCli(home, ['whoami']);
    failsWith(fromFile, 'insecure_base_url', 1);
    assert.match(fromFile.stderr, /full-privilege, long-lived credential/);

    const home2 = tempHome();
    const fromEnv = await runCli(home2, ['session', 'ls'], { env: { PADDOCK_BASE_URL: `http://127.0.0.2:${port}`, PADDOCK_API_KEY: KEY } });
    failsWith(fromEnv, 'insecure_base_url', 1);

    const signup = await runCli(home2, ['signup', '--url', `http://127.0.0.2:${port}`, '--email', 'a@example.test', '--password', 'x'.repeat(12)]);
    failsWith(signup, 'insecure_base_url', 1);
    assert.equal(requests, 0);
  } finally {
    server.close();
  }
});

test('a key with a stray character (PADDOCK_API_KEY or the file) is refused before any request, and never echoed', async () => {
  const secret = 'SecretPartThatMustNotLeak0123';
  const home = tempHome();
  // No server listens here: a request would be a connection failure, not this refusal.
  const fromEnv = await runCli(home, ['session', 'ls'], { env: { PADDOCK_BASE_URL: 'http://127.0.0.1:9', PADDOCK_API_KEY: `pdk_live_${secret}\nx` } });
  failsWith(fromEnv, 'malformed_api_key', 2);
  assert.match(fromEnv.stderr, /PADDOCK_API_KEY/);
  assert.doesNotMatch(fromEnv.stderr, new RegExp(secret.slice(0, 12)));
  const dir = join(home, 'config', 'paddock');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.toml'), `base_url = "http://127.0.0.1:9"\napi_key = "pdk_live_${secret}\\u0007"\n`, { mode: 0o600 });
  const fromFile = await runCli(home, ['session', 'ls', '--json']);
  assert.equal(fromFile.code, 2, fromFile.stderr);
  assert.equal(JSON.parse(fromFile.stderr).error.code, 'malformed_api_key');
  assert.doesNotMatch(fromFile.stderr, new RegExp(secret.slice(0, 12)));
});

test('commands that need the service explain how to configure it when nothing is set', async () => {
  const home = tempHome();
  const r = await runCli(home, ['whoami']);
  failsWith(r, 'not_configured', 1);
  assert.match(r.stderr, /Hint: .*paddock signup --url/);
});

test('paddock with no arguments and no terminal prints the help and exits 0', async () => {
  const home = tempHome();
  const out = ok(await runCli(home, []));
  assert.match(out, /^Usage: paddock/);
  for (const group of ['signup', 'whoami', 'keys', 'config', 'session', 'exec', 'files', 'preview', 'allowlist', 'secrets']) {
    assert.match(out, new RegExp(`^  ${group}\\b`, 'm'), `help lists ${group}`);
  }
});

test('every command has --help', async () => {
  const home = tempHome();
  const commands = [
    ['signup'], ['login'], ['whoami'], ['keys', 'create'], ['keys', 'ls'], ['keys', 'rm'], ['completion'], ['config', 'set-url'], ['config', 'set-key'], ['config', 'show'],
    ['session', 'create'], ['session', 'get'], ['session', 'ls'], ['session', 'rm'], ['exec'],
    ['files', 'view'], ['files', 'create'], ['files', 'edit'], ['files', 'ls'], ['files', 'glob'], ['files', 'grep'],
    ['allowlist', 'get'], ['allowlist', 'set'], ['allowlist', 'clear'], ['secrets', 'create'], ['secrets', 'ls'], ['secrets', 'rm'],
    ['preview'], ['preview', 'ls'], ['preview', 'rm'],
  ];
  await Promise.all(
    commands.map(async (c) => {
      const out = ok(await runCli(home, [...c, '--help']));
      assert.match(out, new RegExp(`^Usage: paddock ${c.join(' ')}`), out);
    }),
  );
});

test('--version prints the version of package.json', async () => {
  const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'cli', 'package.json'), 'utf8'));
  assert.equal(ok(await runCli(tempHome(), ['--version'])), `${version}\n`);
});

test('paddock completion bash completes commands, subcommands and flags from the command tree', async () => {
  const home = tempHome();
  const script = ok(await runCli(home, ['completion', 'bash']));
  // The completion function run by bash itself, as it runs at a TAB.
  const complete = (words: string[]) => {
    const args = words.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
    const r = spawnSync('bash', ['-c', `${script}\nCOMP_WORDS=(${args}); COMP_CWORD=${words.length - 1}; _paddock; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter(Boolean);
  };
  assert.deepEqual(complete(['paddock', 'fi']), ['files']);
  assert.deepEqual(complete(['paddock', 'lo']), ['login', 'logs']);
  assert.deepEqual(complete(['paddock', 'logs', '-']), ['-f', '--follow', '-s', '--session', '-h', '--help']);
  assert.deepEqual(complete(['paddock', 'keys', '']), ['create', 'ls', 'rm', '-h', '--help']);
  assert.deepEqual(complete(['paddock', '--json', 'files', 'gr']), ['grep']);
  assert.deepEqual(complete(['paddock', 'files', 'grep', '--ig']), ['--ignore-case']);
  // The value of a flag is not taken for a command: `--path files` stays in grep.
  assert.ok(complete(['paddock', 'files', 'grep', '--path', 'files', '--']).includes('--glob'));
  assert.deepEqual(complete(['paddock', 'keys', 'rm', '--y']), ['--yes']);
  assert.deepEqual(complete(['paddock', 'completion', '']), ['bash', 'zsh', 'fish', '-h', '--help']);
  // After `--` the words are exec's command: nothing is offered.
  assert.deepEqual(complete(['paddock', 'exec', '--', 'l']), []);

  // zsh and fish: made from the same tree (neither shell is on this machine to run them).
  const zsh = ok(await runCli(home, ['completion', 'zsh']));
  assert.match(zsh, /^#compdef paddock$/m);
  assert.match(zsh, /'\/files\/grep'\)\n +commands=\(\)\n +options=\(.*'--ignore-case:ignore case'/);
  const fish = ok(await runCli(home, ['completion', 'fish']));
  assert.match(fish, /^complete -c paddock -n '__paddock_at \\'\/keys\\'' -a 'create' -d 'create an API key/m);
  assert.match(fish, /^complete -c paddock -n '__paddock_at \\'\/files\/grep\\'' -l 'ignore-case' -s 'i' -d 'ignore case'$/m);

  const bad = await runCli(home, ['completion', 'powershell']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /bash, zsh, fish/);
});

test('a usage error exits 2 and names the problem on stderr', async () => {
  const home = tempHome();
  const r = await runCli(home, ['session', 'frobnicate']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown command 'frobnicate'/);
  assert.equal(r.stdout, '');
});
