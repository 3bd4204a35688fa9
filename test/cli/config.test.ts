import { test } from 'node:test';
import assert from 'node:assert/strict';
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
  ok(await runCli(home, ['config', 'set-key', KEY]));
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
  ok(await runCli(home, ['config', 'set-key'], { input: `${KEY}\n` }));
  const shown = json(await runCli(home, ['config', 'show', '--json']));
  assert.equal(shown.apiKey, 'pdk_live_AbCd…MNOP');
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
  ok(await runCli(home, ['config', 'set-key', KEY]));

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
  for (const group of ['signup', 'whoami', 'keys', 'config', 'session', 'exec', 'files', 'allowlist', 'secrets']) {
    assert.match(out, new RegExp(`^  ${group}\\b`, 'm'), `help lists ${group}`);
  }
});

test('every command has --help', async () => {
  const home = tempHome();
  const commands = [
    ['signup'], ['whoami'], ['keys', 'ls'], ['keys', 'rm'], ['config', 'set-url'], ['config', 'set-key'], ['config', 'show'],
    ['session', 'create'], ['session', 'get'], ['session', 'ls'], ['session', 'rm'], ['exec'],
    ['files', 'view'], ['files', 'create'], ['files', 'edit'], ['files', 'ls'], ['files', 'glob'], ['files', 'grep'],
    ['allowlist', 'get'], ['allowlist', 'set'], ['allowlist', 'clear'], ['secrets', 'create'], ['secrets', 'ls'], ['secrets', 'rm'],
  ];
  await Promise.all(
    commands.map(async (c) => {
      const out = ok(await runCli(home, [...c, '--help']));
      assert.match(out, new RegExp(`^Usage: paddock ${c.join(' ')}`), out);
    }),
  );
});

test('a usage error exits 2 and names the problem on stderr', async () => {
  const home = tempHome();
  const r = await runCli(home, ['session', 'frobnicate']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown command 'frobnicate'/);
  assert.equal(r.stdout, '');
});
