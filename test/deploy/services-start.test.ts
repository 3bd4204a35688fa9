import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exited } from '../helpers/processes.ts';
import { eventually } from '../helpers/eventually.ts';

// Two `npm start` in one checkout at once: both bring up the same stack folder's PostgreSQL and
// Redis. Seen before the lock: both ran initdb on the empty folder and one crashed with its
// stack trace.

const SERVICES = new URL('../../scripts/services.ts', import.meta.url).href;

/** startServices in a process of its own, without the test run's services: says its URLs, stops what it started when its stdin ends. */
function starter(dir: string) {
  const script = `
    import { startServices } from ${JSON.stringify(SERVICES)};
    const services = await startServices({ dir: ${JSON.stringify(dir)}, database: 'paddock_twin', log: () => undefined });
    process.stdout.write(JSON.stringify({ databaseUrl: services.databaseUrl, redisUrl: services.redisUrl }) + '\\n');
    process.stdin.resume();
    process.stdin.on('end', () => void services.stop());
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

test('two starts of one stack at once: the second waits for the first and finds the same PostgreSQL and Redis', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-twin-'));
  const starters = [starter(dir), starter(dir)];
  try {
    const said = [];
    for (const s of starters) {
      const line = await eventually('the starter says its services', 200_000, async () => {
        if (s.child.exitCode !== null) throw new Error(`the starter exited ${s.child.exitCode}: ${s.stderr()}`);
        return s.stdout().includes('\n') ? s.stdout().trim() : undefined;
      });
      said.push(JSON.parse(line) as { databaseUrl: string; redisUrl: string });
    }
    assert.deepEqual(said[1], said[0], 'one PostgreSQL and one Redis, with the same passwords');
  } finally {
    // The one that found the services first, then the one that started them.
    for (const s of [...starters].reverse()) {
      s.child.stdin.end();
      await exited(s.child);
    }
    rmSync(dir, { recursive: true, force: true });
  }
});
