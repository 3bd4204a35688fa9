import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// @paddock/sdk as users install it: packed (its prepack builds it), installed offline
// into a project of its own, imported by the system's Node 20 and type-checked by a consumer.

const root = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'paddock-sdk-package-'));
const project = join(work, 'project');
const SYSTEM_NODE = '/usr/bin/node';
test.after(() => rmSync(work, { recursive: true, force: true }));

const npm = (args: string[], cwd = root) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

test('the packed SDK holds its modules and declarations, and installs offline', { timeout: 120_000 }, () => {
  const [packed] = JSON.parse(npm(['pack', './shared/sdk', '--pack-destination', work, '--json'])) as { filename: string; files: { path: string }[] }[];
  const files = packed!.files.map((f) => f.path);
  for (const f of ['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/client.js', 'dist/client.d.ts']) assert.ok(files.includes(f), f);
  assert.ok(!files.some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')), 'no sources');
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  npm(['install', '--offline', '--no-audit', '--no-fund', join(work, packed!.filename)], project);
  assert.ok(existsSync(join(project, 'node_modules/@paddock/sdk/dist/index.js')));
});

test('Node 20 imports it by its package name; errors carry their code', { skip: !existsSync(SYSTEM_NODE) }, () => {
  writeFileSync(
    join(project, 'use.mjs'),
    `import { PaddockClient, PaddockApiError, InsecureBaseUrlError } from '@paddock/sdk';
     const c = new PaddockClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'pdk_live_x' });
     let insecure = false;
     try { new PaddockClient({ baseUrl: 'http://paddock.example', apiKey: 'pdk_live_x' }); } catch (e) { insecure = e instanceof InsecureBaseUrlError; }
     const e = new PaddockApiError({ status: 429, code: 'rate_limited', detail: 'slow down', retryAfter: 3 });
     console.log(JSON.stringify({ base: c.baseUrl, insecure, code: e.code, retryAfter: e.retryAfter, node: process.versions.node }));`,
  );
  const run = spawnSync(SYSTEM_NODE, ['use.mjs'], { cwd: project, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout) as { base: string; insecure: boolean; code: string; retryAfter: number };
  assert.equal(out.base, 'http://127.0.0.1:9');
  assert.equal(out.insecure, true);
  assert.equal(out.code, 'rate_limited');
  assert.equal(out.retryAfter, 3);
});

test('a TypeScript consumer type-checks against its declarations, and a wrong call does not', { timeout: 60_000 }, () => {
  const tsconfig = { compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, lib: ['es2022', 'dom'], types: [] } };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig));
  const good = `import { PaddockClient, type ExecResult } from '@paddock/sdk';
const c = new PaddockClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
export async function f(): Promise<number | null> {
  const r: ExecResult = await c.exec('sbx_1', { command: 'true' }, { signal: AbortSignal.timeout(1000) });
  for await (const e of c.execStream('sbx_1', { command: ['echo', 'hi'] })) if (e.type === 'exit') return e.exitCode;
  return r.exitCode;
}\n`;
  writeFileSync(join(project, 'good.ts'), good);
  const tsc = join(root, 'node_modules/.bin/tsc');
  const ok = spawnSync(tsc, ['-p', project], { cwd: project, encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  writeFileSync(join(project, 'bad.ts'), `import { PaddockClient } from '@paddock/sdk';\nnew PaddockClient({ baseUrl: 1 });\n`);
  const bad = spawnSync(tsc, ['-p', project], { cwd: project, encoding: 'utf8' });
  assert.notEqual(bad.status, 0);
  assert.match(bad.stdout, /bad\.ts/);
});
