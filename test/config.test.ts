import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ConfigError, parseConfig, unknownPaddockVariables } from '../shared/config.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BASE = {
  NODE_ENV: 'development',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/paddock',
  REDIS_URL: 'redis://127.0.0.1:6379',
};

function configErrorOf(env: Record<string, string | undefined>): string {
  try {
    parseConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail(`expected ${JSON.stringify(env)} to be refused`);
}

test('the shipped defaults: 120 ops/min, 20 lifecycle/min, 2 concurrent, 20 hours/month, a 30-minute cap', () => {
  const config = parseConfig(BASE);
  assert.equal(config.PADDOCK_RATE_SANDBOX_OPS_PER_MIN, 120);
  assert.equal(config.PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN, 20);
  assert.equal(config.PADDOCK_QUOTA_CONCURRENT_SANDBOXES, 2);
  assert.equal(config.PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS, 20);
  assert.equal(config.PADDOCK_SESSION_CAP_SECONDS, 1800);
  assert.equal(config.PADDOCK_BODY_LIMIT_BYTES, 1024 * 1024);
  assert.equal(config.PADDOCK_TRUST_PROXY, false);
  assert.equal(config.PORT, 3000);
});

test('values are read from their variables and converted', () => {
  const config = parseConfig({
    ...BASE,
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '7',
    PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: '3',
    PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS: '2.5',
    PADDOCK_TRUST_PROXY: 'true',
    PORT: '0',
  });
  assert.equal(config.PADDOCK_RATE_SANDBOX_OPS_PER_MIN, 7);
  assert.equal(config.PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN, 3);
  assert.equal(config.PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS, 2.5);
  assert.equal(config.PADDOCK_TRUST_PROXY, true);
  assert.equal(config.PORT, 0);
});

test('an empty variable counts as unset and takes the default', () => {
  const config = parseConfig({ ...BASE, PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '', PADDOCK_JWT_SECRET: '' });
  assert.equal(config.PADDOCK_RATE_SANDBOX_OPS_PER_MIN, 120);
  assert.equal(config.PADDOCK_JWT_SECRET, undefined);
});

const badValues: [string, string, RegExp][] = [
  ['PADDOCK_RATE_SANDBOX_OPS_PER_MIN', 'abc', /whole number/],
  ['PADDOCK_RATE_SANDBOX_OPS_PER_MIN', '0', /at least 1/],
  ['PADDOCK_RATE_SANDBOX_OPS_PER_MIN', '1.5', /whole number/],
  ['PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN', '-1', /at least 1/],
  ['PADDOCK_RATE_AUTH_PER_MIN', 'ten', /whole number/],
  ['PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS', '0', /positive/],
  ['PADDOCK_QUOTA_CONCURRENT_SANDBOXES', '-2', /at least 0/],
  ['PADDOCK_SESSION_CAP_SECONDS', '30m', /whole number/],
  ['PADDOCK_BODY_LIMIT_BYTES', '10', /at least 1024/],
  ['PADDOCK_TRUST_PROXY', 'maybe', /true or false/],
  ['PORT', '70000', /at most 65535/],
  ['DATABASE_URL', 'mysql://localhost/paddock', /postgres/],
  ['REDIS_URL', 'not a url', /redis/],
  ['PADDOCK_JWT_SECRET', 'short', /at least 32/],
  ['PADDOCK_LOG_LEVEL', 'loud', /.+/],
  ['NODE_ENV', 'staging', /.+/],
];
for (const [name, value, message] of badValues) {
  test(`a bad ${name} (${JSON.stringify(value)}) is refused naming the variable`, () => {
    const text = configErrorOf({ ...BASE, [name]: value });
    const line = text.split('\n').find((l) => l.trim().startsWith(`${name}:`));
    assert.ok(line, `no line names ${name}:\n${text}`);
    assert.match(line, message);
  });
}

test('every bad variable is named, not only the first', () => {
  const text = configErrorOf({ ...BASE, PADDOCK_RATE_SANDBOX_OPS_PER_MIN: 'x', PADDOCK_SESSION_CAP_SECONDS: 'y' });
  assert.match(text, /PADDOCK_RATE_SANDBOX_OPS_PER_MIN:/);
  assert.match(text, /PADDOCK_SESSION_CAP_SECONDS:/);
});

test('a missing DATABASE_URL or REDIS_URL is named as required', () => {
  const { DATABASE_URL: _db, ...withoutDb } = BASE;
  assert.match(configErrorOf(withoutDb), /DATABASE_URL: is required/);
  const { REDIS_URL: _redis, ...withoutRedis } = BASE;
  assert.match(configErrorOf(withoutRedis), /REDIS_URL: is required/);
  assert.match(configErrorOf({ ...BASE, DATABASE_URL: '' }), /DATABASE_URL: is required/);
});

test('PADDOCK_JWT_SECRET is required in production (the default NODE_ENV), optional in development', () => {
  assert.match(configErrorOf({ ...BASE, NODE_ENV: 'production' }), /PADDOCK_JWT_SECRET/);
  const { NODE_ENV: _env, ...unset } = BASE;
  assert.match(configErrorOf(unset), /PADDOCK_JWT_SECRET/);
  const secret = 's'.repeat(32);
  const production = { ...BASE, NODE_ENV: 'production', PADDOCK_JWT_SECRET: secret, PADDOCK_SECRETS_KEY: 'ab'.repeat(32) };
  assert.equal(parseConfig(production).PADDOCK_JWT_SECRET, secret);
  const { PADDOCK_JWT_SECRET: _secret, ...withoutSecret } = production;
  assert.match(configErrorOf(withoutSecret), /PADDOCK_JWT_SECRET: is required/);
  assert.equal(parseConfig(BASE).PADDOCK_JWT_SECRET, undefined);
});

test('unknown PADDOCK_ variables (typos) are reported; known and foreign ones are not', () => {
  const unknown = unknownPaddockVariables({
    ...BASE,
    PADDOCK_RATE_SANDBOX_OPS_PER_MINUTE: '5',
    PADDOCK_RATE_SANDBOX_OPS_PER_MIN: '5',
    PADDOCK_API_KEY: 'pdk_live_x',
    HOME: '/root',
  });
  assert.deepEqual(unknown, ['PADDOCK_RATE_SANDBOX_OPS_PER_MINUTE']);
});

function runApiMain(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['api/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

test('node api/main.ts with a bad PADDOCK_RATE_SANDBOX_OPS_PER_MIN exits non-zero naming the variable', async () => {
  const { code, stderr } = await runApiMain({ ...BASE, PADDOCK_RATE_SANDBOX_OPS_PER_MIN: 'lots' });
  assert.notEqual(code, 0);
  assert.equal(code, 78, 'EX_CONFIG');
  assert.match(stderr, /PADDOCK_RATE_SANDBOX_OPS_PER_MIN: expected a whole number/);
});

test('node api/main.ts in production without PADDOCK_JWT_SECRET refuses to start', async () => {
  const { code, stderr } = await runApiMain({ ...BASE, NODE_ENV: 'production' });
  assert.notEqual(code, 0);
  assert.match(stderr, /PADDOCK_JWT_SECRET/);
});

test('PADDOCK_LISTEN_FD is unset by default; a descriptor below 3 (stdin, stdout, stderr) is refused', () => {
  assert.equal(parseConfig(BASE).PADDOCK_LISTEN_FD, undefined);
  assert.equal(parseConfig({ ...BASE, PADDOCK_LISTEN_FD: '3' }).PADDOCK_LISTEN_FD, 3);
  for (const bad of ['0', '2', 'three', '-3']) assert.match(configErrorOf({ ...BASE, PADDOCK_LISTEN_FD: bad }), /PADDOCK_LISTEN_FD/);
});

test('a preview domain must be a domain of its own: not the API host, not above it, not a top-level name, and the API host is named with it', () => {
  const own = /PADDOCK_PREVIEW_DOMAIN: must be a registrable domain of its own, not the API's host \(api\.example\.com\)/;
  assert.match(configErrorOf({ ...BASE, PADDOCK_PREVIEW_DOMAIN: 'example.com', PADDOCK_API_HOST: 'api.example.com' }), own);
  assert.match(configErrorOf({ ...BASE, PADDOCK_PREVIEW_DOMAIN: 'api.example.com', PADDOCK_API_HOST: 'api.example.com' }), own);
  // A sibling under the API's domain too: its apps could set cookies for example.com.
  assert.match(configErrorOf({ ...BASE, PADDOCK_PREVIEW_DOMAIN: 'previews.example.com', PADDOCK_API_HOST: 'api.example.com' }), own);
  assert.match(configErrorOf({ ...BASE, PADDOCK_PREVIEW_DOMAIN: 'dev', PADDOCK_API_HOST: 'api.example.com' }), /PADDOCK_PREVIEW_DOMAIN: dev is a top-level name/);
  assert.match(configErrorOf({ ...BASE, PADDOCK_PREVIEW_DOMAIN: 'previews.example.dev' }), /PADDOCK_API_HOST: is required with PADDOCK_PREVIEW_DOMAIN/);
  assert.match(configErrorOf({ ...BASE, PADDOCK_PREVIEW_DOMAIN: 'Previews.Example.dev', PADDOCK_API_HOST: 'api.example.com' }), /PADDOCK_PREVIEW_DOMAIN: must be a lower-case domain name/);
  const ok = parseConfig({ ...BASE, PADDOCK_PREVIEW_DOMAIN: 'example-previews.dev', PADDOCK_API_HOST: 'api.example.com' });
  assert.equal(ok.PADDOCK_PREVIEW_DOMAIN, 'example-previews.dev');
  assert.equal(parseConfig({ ...BASE, PADDOCK_PREVIEW_DOMAIN: 'previews.example-usercontent.com', PADDOCK_API_HOST: 'api.example.com' }).PADDOCK_PREVIEW_DOMAIN, 'previews.example-usercontent.com');
});
