import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

// The CLI as users install it: `npm pack ./cli` (its prepack builds the bundle), then
// the tarball installed offline into a temporary prefix, then `paddock` run from there on the
// system's own Node (20 here), not the server's.

const root = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'paddock-cli-package-'));
const prefix = join(work, 'prefix');
const SYSTEM_NODE = '/usr/bin/node';

test.after(() => rmSync(work, { recursive: true, force: true }));

const npm = (args: string[], cwd = root) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

test('the packed CLI holds only its bundle and installs offline with no dependency to fetch', { timeout: 180_000 }, () => {
  const [packed] = JSON.parse(npm(['pack', './cli', '--pack-destination', work, '--json'])) as { filename: string; files: { path: string }[] }[];
  const files = packed!.files.map((f) => f.path).sort();
  const fixed = files.filter((f) => !f.startsWith('dist/'));
  assert.deepEqual(fixed, ['README.md', 'bin/check-node.cjs', 'bin/paddock.cjs', 'package.json']);
  const dist = files.filter((f) => f.startsWith('dist/'));
  assert.ok(dist.includes('dist/paddock.js'), dist.join(', '));
  // The entry and the chunks it loads on demand (the TUI, the MCP server), with their licences.
  for (const f of dist) assert.match(f, /^dist\/[\w-]+\.js(\.LEGAL\.txt)?$/);
  const manifest = JSON.parse(readFileSync(join(root, 'cli/package.json'), 'utf8')) as Record<string, unknown>;
  assert.equal(manifest.name, '@paddock/cli');
  assert.equal(manifest.dependencies, undefined, 'everything is bundled: nothing to look up on the registry');
  // --offline: a dependency the tarball lacked would fail the install here.
  npm(['install', '--global', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, join(work, packed!.filename)], work);
  assert.ok(existsSync(join(prefix, 'bin/paddock')));
  assert.deepEqual(readdirSync(join(prefix, 'lib/node_modules/@paddock/cli')).sort(), ['README.md', 'bin', 'dist', 'package.json']);
  // A plain subcommand parses neither the TUI nor the MCP server: the entry imports them only on demand.
  const entry = readFileSync(join(prefix, 'lib/node_modules/@paddock/cli/dist/paddock.js'), 'utf8');
  const eager = [...entry.matchAll(/^import\s[^;]*?from\s*"(\.\/[^"]+)"/gm)].map((m) => m[1]!);
  const lazy = [...entry.matchAll(/import\("(\.\/[^"]+)"\)/g)].map((m) => m[1]!);
  assert.ok(lazy.some((f) => f.startsWith('./serve-')) && lazy.some((f) => f.startsWith('./open-picker-')), lazy.join(', '));
  for (const f of eager) assert.doesNotMatch(f, /^\.\/(serve|open-picker)-/);
});

test('the installed paddock runs on the system Node, with its version and help', { timeout: 60_000, skip: !existsSync(SYSTEM_NODE) }, () => {
  const systemVersion = execFileSync(SYSTEM_NODE, ['--version'], { encoding: 'utf8' }).trim();
  // The first node on PATH is the system's: the one a user's shell (or an AI app) finds.
  const env = { PATH: `/usr/bin:/bin`, HOME: work };
  const version = spawnSync(join(prefix, 'bin/paddock'), ['--version'], { env, encoding: 'utf8' });
  assert.equal(version.status, 0, `${systemVersion}: ${version.stderr}`);
  assert.equal(version.stdout.trim(), JSON.parse(readFileSync(join(root, 'cli/package.json'), 'utf8')).version);
  const help = spawnSync(join(prefix, 'bin/paddock'), ['--help'], { env, encoding: 'utf8' });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /Usage: paddock/);
  assert.match(help.stdout, /\bmcp\b/);
  // Not in a terminal and without a config: a clear error, not a stack trace.
  const list = spawnSync(join(prefix, 'bin/paddock'), ['session', 'ls'], { env: { ...env, XDG_CONFIG_HOME: join(work, 'config') }, encoding: 'utf8' });
  assert.notEqual(list.status, 0);
  assert.doesNotMatch(list.stderr, /\n\s+at /, 'no stack trace');
});

test('on a Node older than the CLI supports, one line says so', () => {
  const { tooOld, MINIMUM_MAJOR } = createRequire(import.meta.url)(join(root, 'cli/bin/check-node.cjs')) as {
    tooOld: (v: string) => string | null;
    MINIMUM_MAJOR: number;
  };
  assert.equal(MINIMUM_MAJOR, 20);
  for (const old of ['18.20.4', '16.0.0', '19.9.0']) {
    const message = tooOld(old);
    assert.ok(message, old);
    assert.doesNotMatch(message, /\n/);
    assert.match(message, new RegExp(`Node\\.js 20 or newer; this is Node\\.js ${old.replace(/\./g, '\\.')}`));
  }
  for (const fine of ['20.0.0', '22.11.0', '24.21.0']) assert.equal(tooOld(fine), null, fine);
  // The check itself is ES5: an old Node parses it (no const, arrows, classes or template strings).
  const source = readFileSync(join(root, 'cli/bin/check-node.cjs'), 'utf8') + readFileSync(join(root, 'cli/bin/paddock.cjs'), 'utf8');
  assert.doesNotMatch(source.replace(/\/\/.*$/gm, ''), /\bconst\b|\blet\b|=>|\bclass\b|`/);
});

test('mcp init from the installed CLI writes a command that runs whatever node comes first on the app\'s PATH', { timeout: 60_000, skip: !existsSync(SYSTEM_NODE) }, async () => {
  const home = join(work, 'mcp-home');
  const env = { PATH: '/usr/bin:/bin', HOME: home, XDG_CONFIG_HOME: join(home, '.config') };
  const init = spawnSync(join(prefix, 'bin/paddock'), ['mcp', 'init', 'claude-code', '--json'], { env, encoding: 'utf8' });
  assert.equal(init.status, 0, init.stderr);
  const entry = (JSON.parse(readFileSync(join(home, '.claude.json'), 'utf8')) as { mcpServers: { paddock: { command: string; args: string[] } } }).mcpServers.paddock;
  assert.ok(entry.command.startsWith('/'), entry.command);
  assert.equal(entry.args.at(-2), 'mcp');
  // An app whose PATH finds an old node first (here one that only fails): the entry never asks PATH.
  const oldBin = join(work, 'old-node-bin');
  mkdirSync(oldBin, { recursive: true });
  writeFileSync(join(oldBin, 'node'), '#!/bin/sh\necho "node v16: SyntaxError" >&2\nexit 1\n', { mode: 0o755 });
  const transport = new StdioClientTransport({ command: entry.command, args: entry.args, env: { ...env, PATH: `${oldBin}:/usr/bin:/bin` }, stderr: 'pipe' });
  const client = new Client({ name: 'package-test', version: '1.0.0' });
  await client.connect(transport);
  try {
    const tools = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(tools.includes('exec') && tools.includes('sandbox_create'), tools.join(','));
  } finally {
    await client.close();
  }
});
