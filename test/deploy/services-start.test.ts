import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { exited } from '../helpers/processes.ts';
import { eventually } from '../helpers/eventually.ts';

// Two `npm start` in one checkout at once: both bring up the same stack folder's PostgreSQL and
// Redis. Seen before the lock: both ran initdb on the empty folder and one crashed with its
// stack trace. Seen before the stack counted its users: the first to stop took the services away
// from the other.

const SERVICES = new URL('../../scripts/services.ts', import.meta.url).href;

/** startServices in a process of its own, without the test run's services: says its URLs on stdout, what it does on stderr, and stops when its stdin ends. */
function starter(dir: string) {
  const script = `
    import { startServices } from ${JSON.stringify(SERVICES)};
    const services = await startServices({ dir: ${JSON.stringify(dir)}, database: 'paddock_twin', log: (line) => process.stderr.write(line + '\\n') });
    process.stdout.write(JSON.stringify({ databaseUrl: services.databaseUrl, redisUrl: services.redisUrl }) + '\\n');
    process.stdin.resume();
    process.stdin.on('end', () => void services.stop(async () => void process.stderr.write('last out\\n')));
  `;
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  return { child, stdout: () => stdout, stderr: () => stderr };
}

/** Starts two users of one stack folder at once; answers each one's URLs once both have said them. */
async function twoStarters(dir: string) {
  const starters = [starter(dir), starter(dir)];
  const said = [];
  for (const s of starters) {
    const line = await eventually('the starter says its services', 200_000, async () => {
      if (s.child.exitCode !== null) throw new Error(`the starter exited ${s.child.exitCode}: ${s.stderr()}`);
      return s.stdout().includes('\n') ? s.stdout().trim() : undefined;
    });
    said.push(JSON.parse(line) as { databaseUrl: string; redisUrl: string });
  }
  return { starters, said };
}

async function stopStarter(s: ReturnType<typeof starter>): Promise<void> {
  s.child.stdin.end();
  await exited(s.child);
}

/** Whether PostgreSQL and Redis at these URLs answer a query. */
async function answers(urls: { databaseUrl: string; redisUrl: string }): Promise<{ postgres: boolean; redis: boolean }> {
  const client = new pg.Client({ connectionString: urls.databaseUrl, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  const postgres = await client.connect().then(
    async () => (await client.query('select 1 as one')).rows[0]?.one === 1,
    () => false,
  );
  await client.end().catch(() => undefined);
  const redis = new Redis(urls.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000 });
  redis.on('error', () => undefined);
  const pong = await redis.connect().then(
    async () => (await redis.ping()) === 'PONG',
    () => false,
  );
  redis.disconnect();
  return { postgres, redis: pong };
}

test('two starts of one stack at once: the second waits for the first and finds the same PostgreSQL and Redis', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-twin-'));
  const { starters, said } = await twoStarters(dir);
  try {
    assert.deepEqual(said[1], said[0], 'one PostgreSQL and one Redis, with the same passwords');
  } finally {
    for (const s of starters) await stopStarter(s);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the first user of a stack to stop leaves its services to the other; the last one out stops them', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-twin-'));
  const { starters, said } = await twoStarters(dir);
  try {
    const urls = said[0]!;
    assert.deepEqual(await answers(urls), { postgres: true, redis: true });
    // The one that started them stops first.
    const first = starters.findIndex((s) => s.stderr().includes('PostgreSQL started'));
    assert.ok(first >= 0, starters.map((s) => s.stderr()).join('\n'));
    await stopStarter(starters[first]!);
    assert.deepEqual(await answers(urls), { postgres: true, redis: true }, 'still there for the other user');
    assert.doesNotMatch(starters[first]!.stderr(), /last out/, 'what the last one does (the dev stack destroys its sandboxes) is not done by the first');
    await stopStarter(starters[1 - first]!);
    assert.match(starters[1 - first]!.stderr(), /last out/);
    assert.deepEqual(await answers(urls), { postgres: false, redis: false }, 'stopped by the last one out');
  } finally {
    for (const s of starters) await stopStarter(s);
    rmSync(dir, { recursive: true, force: true });
  }
});
