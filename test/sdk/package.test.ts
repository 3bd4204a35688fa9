import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { newAccount } from '../helpers/accounts.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

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

test('Node 20 drives a sandbox through the handle: create, run, write and read, a directory up and down, a preview, destroy', { skip: !existsSync(SYSTEM_NODE), timeout: 60_000 }, async () => {
  // Started here, not with the file: the synchronous npm and tsc runs above would stall its event loop.
  const stack = await startSandboxStack();
  const account = await newAccount(stack.url, 'sdk-package-handle');
  writeFileSync(
    join(project, 'handle.mjs'),
    `import { Sandbox, PaddockError } from '@paddock/sdk';
     import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
     const sbx = await Sandbox.create();
     const out = {};
     try {
       out.run = await sbx.commands.run('echo hi; exit 2');
       await sbx.files.write('/tmp/p.txt', new Uint8Array([104, 105]));
       out.read = await sbx.files.readText('/tmp/p.txt');
       mkdirSync('dirs/up/sub', { recursive: true });
       writeFileSync('dirs/up/sub/f.txt', 'dir');
       out.uploaded = (await sbx.files.uploadDir('dirs/up', '/tmp/up')).files;
       out.downloaded = await sbx.files.downloadDir('/tmp/up', 'dirs/down');
       out.roundTrip = readFileSync('dirs/down/sub/f.txt', 'utf8');
       out.dispose = typeof sbx[Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')];
       await sbx.commands.run(['python3', '-m', 'http.server', '8000', '--bind', '127.0.0.1', '--directory', '/tmp/up'], { background: true });
       const preview = await sbx.previews.create(8000);
       for (let i = 0; i < 100; i++) {
         const res = await preview.fetch('/sub/f.txt');
         out.previewed = [res.status, await res.text()];
         if (res.status === 200) break;
         await new Promise((ok) => setTimeout(ok, 200));
       }
     } finally {
       await sbx.destroy();
     }
     out.state = (await sbx.info()).state;
     out.missing = await Sandbox.list({ apiKey: '' }).catch((e) => e instanceof PaddockError && e.code);
     console.log(JSON.stringify(out));`,
  );
  const env = { ...process.env, PADDOCK_API_KEY: account.key, PADDOCK_BASE_URL: stack.url };
  const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((ok) => {
    const child = spawn(SYSTEM_NODE, ['handle.mjs'], { cwd: project, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('close', (status) => ok({ status, stdout, stderr }));
  });
  assert.equal(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout) as { run: { exitCode: number; stdout: string }; read: string; uploaded: number; downloaded: number; roundTrip: string; dispose: string; previewed: [number, string]; state: string; missing: string };
  assert.deepEqual([out.run.exitCode, out.run.stdout], [2, 'hi\n']);
  assert.equal(out.read, 'hi');
  assert.deepEqual([out.uploaded, out.downloaded, out.roundTrip], [2, 2, 'dir'], 'uploadDir and downloadDir load their tar modules on Node 20');
  assert.equal(out.dispose, 'function');
  assert.deepEqual(out.previewed, [200, 'dir'], 'preview.fetch loads node:http on Node 20 and reaches *.localhost on loopback');
  assert.equal(out.state, 'destroyed');
  assert.equal(out.missing, 'missing_api_key');
});
