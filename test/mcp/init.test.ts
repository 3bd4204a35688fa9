import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import {
  MCP_TARGETS,
  configSnippet,
  displayConfigPath,
  findMcpTarget,
  resolveConfigPath,
  type McpScope,
  type McpTarget,
  type PlatformContext,
} from '../../shared/mcp/targets.ts';
import { McpInitError, backupStamp, mcpInit } from '../../cli/mcp/init.ts';
import { resolvePaddockCommand } from '../../cli/mcp/paddock-command.ts';
import { tomlHeaderPath } from '../../cli/mcp/merge.ts';

const root = resolve(import.meta.dirname, '../..');
const fixtures = join(import.meta.dirname, 'fixtures');
const COMMAND = '/opt/paddock/bin/paddock';
const NOW = new Date('2025-03-04T05:06:07.890Z');

const scratch = mkdtempSync(join(tmpdir(), 'paddock-mcp-init-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

let homes = 0;
/** A fresh fake home (and project folder in it) for one test: the real home is never touched. */
function fakeHome(platform = 'linux', env: Record<string, string> = {}): PlatformContext {
  const home = join(scratch, `home-${++homes}`);
  mkdirSync(join(home, 'project'), { recursive: true });
  return { platform, homedir: home, env, cwd: join(home, 'project') };
}

function target(name: string): McpTarget {
  const t = findMcpTarget(name);
  assert.ok(t, name);
  return t;
}

function parseConfig(t: McpTarget, text: string): Record<string, unknown> {
  if (t.format === 'toml') return toml(text);
  const errors: unknown[] = [];
  const value = parseJsonc(text, errors as never, { allowTrailingComma: true }) as Record<string, unknown>;
  assert.deepEqual(errors, [], `parses as JSON with comments:\n${text}`);
  return value;
}

/** TOML as plain objects (smol-toml's tables have no prototype). */
function toml(text: string): Record<string, any> {
  return JSON.parse(JSON.stringify(parseToml(text))) as Record<string, any>;
}

function at(doc: unknown, path: readonly string[]): unknown {
  let v = doc;
  for (const k of path) v = (v as Record<string, unknown> | undefined)?.[k];
  return v;
}

function servers(t: McpTarget, text: string): Record<string, unknown> {
  return at(parseConfig(t, text), t.serversKey) as Record<string, unknown>;
}

/** The entry each client documents for a stdio server. */
const EXPECTED_ENTRY: Record<string, Record<string, unknown>> = {
  'claude-desktop': { command: COMMAND, args: ['mcp', 'serve'] },
  'claude-code': { type: 'stdio', command: COMMAND, args: ['mcp', 'serve'] },
  cursor: { command: COMMAND, args: ['mcp', 'serve'] },
  windsurf: { command: COMMAND, args: ['mcp', 'serve'] },
  vscode: { type: 'stdio', command: COMMAND, args: ['mcp', 'serve'] },
  codex: { command: COMMAND, args: ['mcp', 'serve'] },
  gemini: { command: COMMAND, args: ['mcp', 'serve'] },
  zed: { source: 'custom', command: COMMAND, args: ['mcp', 'serve'], env: {} },
};

const EXPECTED_KEY: Record<string, string> = {
  'claude-desktop': 'mcpServers',
  'claude-code': 'mcpServers',
  cursor: 'mcpServers',
  windsurf: 'mcpServers',
  vscode: 'servers',
  codex: 'mcp_servers',
  gemini: 'mcpServers',
  zed: 'context_servers',
};

/** The entry after merging into the fixture (the Claude Code one already has a paddock entry with an env). */
function mergedEntry(name: string): Record<string, unknown> {
  const entry = EXPECTED_ENTRY[name]!;
  return name === 'claude-code' ? { ...entry, env: { PADDOCK_BASE_URL: 'https://staging.paddock.example' } } : entry;
}

/** Each target's fixture: a real-looking file with other servers (and comments where the format has them). */
const FIXTURE: Record<string, { file: string; others: string[] }> = {
  'claude-desktop': { file: 'claude-desktop.json', others: ['filesystem'] },
  'claude-code': { file: 'claude-code.json', others: ['github'] },
  cursor: { file: 'cursor.json', others: ['linear'] },
  windsurf: { file: 'windsurf.json', others: ['git'] },
  vscode: { file: 'vscode.jsonc', others: ['github'] },
  codex: { file: 'codex.toml', others: ['context7'] },
  gemini: { file: 'gemini.json', others: ['git'] },
  zed: { file: 'zed.jsonc', others: ['notes'] },
};

function commentLines(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => /^\s*(\/\/|\/\*|#)|\/\/ |# /.test(l))
    .map((l) => l.trim());
}

function backupsOf(file: string): string[] {
  return readdirSync(dirname(file)).filter((n) => n.startsWith(`${basename(file)}.bak-`));
}

function init(t: McpTarget, ctx: PlatformContext, extra: { scope?: McpScope; print?: boolean; command?: string } = {}) {
  return mcpInit({ target: t.name, ctx, command: COMMAND, now: () => NOW, ...extra });
}

test('the table has the eight documented clients', () => {
  assert.deepEqual(
    MCP_TARGETS.map((t) => t.name),
    ['claude-desktop', 'claude-code', 'cursor', 'windsurf', 'vscode', 'codex', 'gemini', 'zed'],
  );
  for (const t of MCP_TARGETS) assert.equal(t.serversKey.join('.'), EXPECTED_KEY[t.name], t.name);
});

describe('config file locations', () => {
  const expected: Record<string, Record<'linux' | 'macos' | 'windows', string>> = {
    'claude-desktop': {
      linux: '/home/ada/.config/Claude/claude_desktop_config.json',
      macos: '/Users/ada/Library/Application Support/Claude/claude_desktop_config.json',
      windows: 'C:\\Users\\ada\\AppData\\Roaming\\Claude\\claude_desktop_config.json',
    },
    'claude-code': { linux: '/home/ada/.claude.json', macos: '/Users/ada/.claude.json', windows: 'C:\\Users\\ada\\.claude.json' },
    cursor: { linux: '/home/ada/.cursor/mcp.json', macos: '/Users/ada/.cursor/mcp.json', windows: 'C:\\Users\\ada\\.cursor\\mcp.json' },
    windsurf: {
      linux: '/home/ada/.codeium/windsurf/mcp_config.json',
      macos: '/Users/ada/.codeium/windsurf/mcp_config.json',
      windows: 'C:\\Users\\ada\\.codeium\\windsurf\\mcp_config.json',
    },
    vscode: {
      linux: '/home/ada/.config/Code/User/mcp.json',
      macos: '/Users/ada/Library/Application Support/Code/User/mcp.json',
      windows: 'C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\mcp.json',
    },
    codex: { linux: '/home/ada/.codex/config.toml', macos: '/Users/ada/.codex/config.toml', windows: 'C:\\Users\\ada\\.codex\\config.toml' },
    gemini: { linux: '/home/ada/.gemini/settings.json', macos: '/Users/ada/.gemini/settings.json', windows: 'C:\\Users\\ada\\.gemini\\settings.json' },
    zed: {
      linux: '/home/ada/.config/zed/settings.json',
      macos: '/Users/ada/.config/zed/settings.json',
      windows: 'C:\\Users\\ada\\AppData\\Roaming\\Zed\\settings.json',
    },
  };
  const contexts = {
    linux: { platform: 'linux', homedir: '/home/ada', env: {}, cwd: '/home/ada/src/app' },
    macos: { platform: 'darwin', homedir: '/Users/ada', env: {}, cwd: '/Users/ada/src/app' },
    windows: {
      platform: 'win32',
      homedir: 'C:\\Users\\ada',
      env: { APPDATA: 'C:\\Users\\ada\\AppData\\Roaming', USERPROFILE: 'C:\\Users\\ada' },
      cwd: 'C:\\src\\app',
    },
  } satisfies Record<string, PlatformContext>;

  for (const t of MCP_TARGETS) {
    test(`${t.name}: the user file on Linux, macOS and Windows`, () => {
      for (const os of ['linux', 'macos', 'windows'] as const) {
        assert.equal(resolveConfigPath(t, 'user', contexts[os]), expected[t.name]![os], `${t.name} on ${os}`);
      }
    });
  }

  test('the paths as the API shows them', () => {
    assert.equal(displayConfigPath(target('claude-desktop'), 'user', 'macos'), '~/Library/Application Support/Claude/claude_desktop_config.json');
    assert.equal(displayConfigPath(target('claude-desktop'), 'user', 'windows'), '%APPDATA%\\Claude\\claude_desktop_config.json');
    assert.equal(displayConfigPath(target('claude-desktop'), 'user', 'linux'), '~/.config/Claude/claude_desktop_config.json');
    assert.equal(displayConfigPath(target('windsurf'), 'user', 'windows'), '%USERPROFILE%\\.codeium\\windsurf\\mcp_config.json');
    assert.equal(displayConfigPath(target('vscode'), 'project', 'linux'), '.vscode/mcp.json');
    assert.equal(displayConfigPath(target('vscode'), 'project', 'windows'), '.vscode\\mcp.json');
  });

  test('XDG_CONFIG_HOME, APPDATA, CODEX_HOME and CLAUDE_CONFIG_DIR are honoured; relative values are not', () => {
    const linux = (env: Record<string, string>) => ({ ...contexts.linux, env });
    assert.equal(resolveConfigPath(target('vscode'), 'user', linux({ XDG_CONFIG_HOME: '/xdg' })), '/xdg/Code/User/mcp.json');
    assert.equal(resolveConfigPath(target('zed'), 'user', linux({ XDG_CONFIG_HOME: '/xdg' })), '/xdg/zed/settings.json');
    assert.equal(resolveConfigPath(target('zed'), 'user', linux({ XDG_CONFIG_HOME: 'relative/dir' })), '/home/ada/.config/zed/settings.json');
    assert.equal(resolveConfigPath(target('codex'), 'user', linux({ CODEX_HOME: '/srv/codex' })), '/srv/codex/config.toml');
    assert.equal(resolveConfigPath(target('claude-code'), 'user', linux({ CLAUDE_CONFIG_DIR: '/cc' })), '/cc/.claude.json');
    // macOS apps do not follow XDG_CONFIG_HOME.
    const mac = { ...contexts.macos, env: { XDG_CONFIG_HOME: '/xdg' } };
    assert.equal(resolveConfigPath(target('vscode'), 'user', mac), '/Users/ada/Library/Application Support/Code/User/mcp.json');
    const win = { ...contexts.windows, env: {} };
    assert.equal(resolveConfigPath(target('vscode'), 'user', win), 'C:\\Users\\ada\\AppData\\Roaming\\Code\\User\\mcp.json');
  });

  test('project scope: the file in the project folder, for the clients that have one', () => {
    const project = (name: string) => resolveConfigPath(target(name), 'project', contexts.linux);
    assert.equal(project('claude-code'), '/home/ada/src/app/.mcp.json');
    assert.equal(project('vscode'), '/home/ada/src/app/.vscode/mcp.json');
    assert.equal(project('cursor'), '/home/ada/src/app/.cursor/mcp.json');
    assert.equal(project('gemini'), '/home/ada/src/app/.gemini/settings.json');
    assert.equal(project('codex'), '/home/ada/src/app/.codex/config.toml');
    assert.equal(resolveConfigPath(target('vscode'), 'project', contexts.windows), 'C:\\src\\app\\.vscode\\mcp.json');
    for (const name of ['claude-desktop', 'windsurf', 'zed']) {
      assert.throws(() => init(target(name), fakeHome(), { scope: 'project' }), (err: unknown) => {
        assert.ok(err instanceof McpInitError);
        assert.equal(err.code, 'unknown_scope');
        assert.match(err.hint ?? '', /--scope user/);
        return true;
      });
    }
  });
});

describe('mcp init on each client\'s file', () => {
  for (const t of MCP_TARGETS) {
    const fixture = FIXTURE[t.name]!;
    const original = readFileSync(join(fixtures, fixture.file), 'utf8');

    for (const platform of ['linux', 'darwin']) {
      test(`${t.name} (${platform}): merges into an existing file, keeps other servers, settings and comments, backs it up, and is idempotent`, () => {
        const ctx = fakeHome(platform);
        const file = resolveConfigPath(t, 'user', ctx);
        mkdirSync(dirname(file), { recursive: true });
        copyFileSync(join(fixtures, fixture.file), file);
        chmodSync(file, 0o600);

        const first = init(t, ctx);
        assert.equal(first.status, 'updated');
        assert.equal(first.written, true);
        assert.equal(first.path, file);
        const text = readFileSync(file, 'utf8');
        assert.equal(text, first.text);

        // The entry, in this client's format and under its key.
        const list = servers(t, text);
        assert.deepEqual(list.paddock, mergedEntry(t.name));
        // Every other server, every other setting and every comment is still there, unchanged.
        const before = parseConfig(t, original);
        const afterDoc = parseConfig(t, text);
        for (const other of fixture.others) assert.deepEqual(list[other], servers(t, original)[other], `${other} kept`);
        for (const key of Object.keys(before)) {
          if (key !== t.serversKey[0]) assert.deepEqual(afterDoc[key], before[key], `${key} kept`);
        }
        for (const line of commentLines(original)) assert.ok(text.includes(line), `comment kept: ${line}`);
        assert.equal(text.includes('pdk_live_'), false);
        assert.equal(statSync(file).mode & 0o777, 0o600, 'the mode is kept');

        // The previous file, byte for byte, beside it.
        assert.deepEqual(backupsOf(file), [`${basename(file)}.bak-20250304T050607Z`]);
        assert.equal(first.backup, `${file}.bak-20250304T050607Z`);
        assert.equal(readFileSync(first.backup, 'utf8'), original);

        // Twice: no change, no second backup.
        const second = init(t, ctx);
        assert.equal(second.status, 'unchanged');
        assert.equal(second.written, false);
        assert.equal(second.backup, undefined);
        assert.equal(readFileSync(file, 'utf8'), text);
        assert.equal(backupsOf(file).length, 1);
      });
    }

    test(`${t.name}: creates the file and its folders when missing, without a backup`, () => {
      const ctx = fakeHome();
      const file = resolveConfigPath(t, 'user', ctx);
      assert.equal(existsSync(dirname(file)), dirname(file) === ctx.homedir);
      const result = init(t, ctx);
      assert.equal(result.status, 'created');
      assert.equal(result.backup, undefined);
      const text = readFileSync(file, 'utf8');
      assert.ok(text.endsWith('\n'));
      assert.deepEqual(parseConfig(t, text), parseConfig(t, configSnippet(t, COMMAND)));
      assert.deepEqual(servers(t, text).paddock, EXPECTED_ENTRY[t.name]);
      assert.deepEqual(backupsOf(file), []);
      assert.equal(init(t, ctx).status, 'unchanged');
    });

    test(`${t.name}: --print shows the result and writes nothing`, () => {
      const ctx = fakeHome();
      const file = resolveConfigPath(t, 'user', ctx);
      mkdirSync(dirname(file), { recursive: true });
      copyFileSync(join(fixtures, fixture.file), file);
      const printed = init(t, ctx, { print: true });
      assert.equal(printed.status, 'updated');
      assert.equal(printed.written, false);
      assert.deepEqual(servers(t, printed.text).paddock, mergedEntry(t.name));
      assert.equal(readFileSync(file, 'utf8'), original);
      assert.deepEqual(backupsOf(file), []);

      const fresh = fakeHome();
      const missing = init(t, fresh, { print: true });
      assert.equal(missing.status, 'created');
      assert.equal(existsSync(resolveConfigPath(t, 'user', fresh)), false);
    });
  }
});

/** A fake home whose config file for `t` holds `text`. */
function fakeHomeWith(t: McpTarget, text: string, platform = 'linux'): PlatformContext {
  const ctx = fakeHome(platform);
  const file = resolveConfigPath(t, 'user', ctx);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return ctx;
}

describe('existing paddock entries', () => {
  test('JSON: a stale command is updated field by field; fields the user added stay', () => {
    const t = target('claude-code');
    const ctx = fakeHomeWith(t, readFileSync(join(fixtures, 'claude-code.json'), 'utf8'));
    const result = init(t, ctx);
    assert.deepEqual(servers(t, result.text).paddock, {
      type: 'stdio',
      command: COMMAND,
      args: ['mcp', 'serve'],
      env: { PADDOCK_BASE_URL: 'https://staging.paddock.example' },
    });
    assert.ok(!result.text.includes('/old/bin/paddock'));
  });

  test('Zed: a user-set env is kept, a missing one is added', () => {
    const t = target('zed');
    const withEnv = '{\n  "context_servers": {\n    // ours\n    "paddock": { "command": "x", "args": [], "env": { "A": "1" } }\n  }\n}\n';
    const r1 = init(t, fakeHomeWith(t, withEnv));
    assert.deepEqual(servers(t, r1.text).paddock, { source: 'custom', command: COMMAND, args: ['mcp', 'serve'], env: { A: '1' } });
    assert.ok(r1.text.includes('// ours'));
    const r2 = init(t, fakeHomeWith(t, '{"context_servers": {"paddock": {"command": "x", "args": []}}}'));
    assert.deepEqual(servers(t, r2.text).paddock, EXPECTED_ENTRY.zed);
  });

  test('Codex TOML: the [mcp_servers.paddock] table is rewritten in place; its sub-tables, extra keys and the rest of the file stay', () => {
    const t = target('codex');
    const original = readFileSync(join(fixtures, 'codex-existing.toml'), 'utf8');
    const ctx = fakeHomeWith(t, original);
    const result = init(t, ctx);
    assert.equal(result.status, 'updated');
    const doc = toml(result.text);
    assert.deepEqual(doc.mcp_servers.paddock, {
      command: COMMAND,
      args: ['mcp', 'serve'],
      startup_timeout_sec: 20,
      env: { PADDOCK_BASE_URL: 'https://staging.paddock.example' },
    });
    assert.deepEqual(doc.mcp_servers.context7, { command: 'npx', args: ['-y', '@upstash/context7-mcp'] });
    assert.equal(doc.model, 'o3');
    // Comments outside the entry's own table stay where they were; the table stays where it was.
    assert.ok(result.text.startsWith('# Codex configuration\nmodel = "o3"\n\n[mcp_servers.paddock]\n'));
    assert.ok(result.text.includes('# The docs server\n[mcp_servers.context7]'));
    assert.equal((result.text.match(/^\[mcp_servers\.paddock\]$/gm) ?? []).length, 1);
    assert.equal(init(t, ctx).status, 'unchanged');
  });

  test('Codex TOML: a new entry goes after the other servers\' tables, before what follows them', () => {
    const t = target('codex');
    const result = init(t, fakeHomeWith(t, readFileSync(join(fixtures, 'codex.toml'), 'utf8')));
    assert.ok(
      result.text.includes(
        'LOG_LEVEL = "warn"\n\n[mcp_servers.paddock]\ncommand = "/opt/paddock/bin/paddock"\nargs = [ "mcp", "serve" ]\n\n# Profiles follow\n[profiles.fast]\n',
      ),
      result.text,
    );
    assert.ok(result.text.endsWith('model = "o4-mini"\n'));
  });

  test('Codex TOML: CRLF line endings are kept', () => {
    const t = target('codex');
    const original = readFileSync(join(fixtures, 'codex.toml'), 'utf8').replace(/\n/g, '\r\n');
    const result = init(t, fakeHomeWith(t, original));
    const lf = init(t, fakeHomeWith(t, original.replace(/\r\n/g, '\n')));
    assert.equal(result.text, lf.text.replace(/\n/g, '\r\n'));
    assert.equal(result.text.replace(/\r\n/g, '').includes('\n'), false, 'no bare LF');
    assert.deepEqual(toml(result.text).mcp_servers.paddock, EXPECTED_ENTRY.codex);
  });

  test('Codex TOML: an entry written with dotted keys or inline is refused, and the file left alone', () => {
    const t = target('codex');
    for (const text of [
      'mcp_servers.paddock.command = "x"\nmcp_servers.paddock.args = []\n',
      '[mcp_servers]\npaddock = { command = "x", args = [] }\n',
    ]) {
      const ctx = fakeHomeWith(t, text);
      assert.throws(() => init(t, ctx), (err: unknown) => err instanceof McpInitError && err.code === 'config_not_editable' && /by hand|table/.test(err.message));
      assert.equal(readFileSync(resolveConfigPath(t, 'user', ctx), 'utf8'), text);
    }
  });

  test('Codex TOML: quoted table headers are recognised', () => {
    assert.deepEqual(tomlHeaderPath('[mcp_servers."paddock"]'), ['mcp_servers', 'paddock']);
    assert.deepEqual(tomlHeaderPath("[ mcp_servers . 'paddock' ] # ours"), ['mcp_servers', 'paddock']);
    assert.deepEqual(tomlHeaderPath('[[profiles.x]]'), ['profiles', 'x']);
    assert.equal(tomlHeaderPath('args = ["[a]"]'), undefined);
    const t = target('codex');
    const result = init(t, fakeHomeWith(t, '[mcp_servers."paddock"]\ncommand = "old"\nargs = []\n'));
    assert.deepEqual(toml(result.text).mcp_servers.paddock, EXPECTED_ENTRY.codex);
  });
});

describe('files paddock will not edit', () => {
  test('invalid JSON is refused and left alone', () => {
    const t = target('cursor');
    const text = '{ "mcpServers": { "a": ';
    const ctx = fakeHomeWith(t, text);
    assert.throws(() => init(t, ctx), (err: unknown) => err instanceof McpInitError && err.code === 'config_not_editable' && /not valid JSON/.test(err.message));
    assert.equal(readFileSync(resolveConfigPath(t, 'user', ctx), 'utf8'), text);
    assert.deepEqual(backupsOf(resolveConfigPath(t, 'user', ctx)), []);
  });

  test('invalid TOML is refused', () => {
    const t = target('codex');
    assert.throws(() => init(t, fakeHomeWith(t, 'model = \n')), (err: unknown) => err instanceof McpInitError && /not valid TOML/.test(err.message));
  });

  test('a root that is not an object, or a servers key that is not one, is refused', () => {
    const t = target('gemini');
    assert.throws(() => init(t, fakeHomeWith(t, '[]')), /does not hold a JSON object/);
    assert.throws(() => init(t, fakeHomeWith(t, '{"mcpServers": []}')), /mcpServers .* is not an object/);
  });

  test('an unknown target names the valid ones', () => {
    assert.throws(() => mcpInit({ target: 'emacs', ctx: fakeHome() }), (err: unknown) => {
      assert.ok(err instanceof McpInitError);
      assert.equal(err.code, 'unknown_target');
      assert.match(err.hint ?? '', /claude-desktop, claude-code, cursor, windsurf, vscode, codex, gemini, zed/);
      return true;
    });
  });
});

describe('edge cases of existing files', () => {
  test('an empty file, or one with only comments, gets the entry', () => {
    const t = target('vscode');
    assert.deepEqual(servers(t, init(t, fakeHomeWith(t, '')).text).paddock, EXPECTED_ENTRY.vscode);
    const commented = init(t, fakeHomeWith(t, '// nothing yet\n'));
    assert.ok(commented.text.startsWith('// nothing yet\n'));
    assert.deepEqual(servers(t, commented.text).paddock, EXPECTED_ENTRY.vscode);
  });

  test('a symlinked config file is edited where it points, and the link stays', () => {
    const t = target('gemini');
    const ctx = fakeHome();
    const real = join(ctx.homedir, 'dotfiles', 'gemini-settings.json');
    mkdirSync(dirname(real), { recursive: true });
    writeFileSync(real, '{"theme": "Dracula"}\n');
    const link = resolveConfigPath(t, 'user', ctx);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(real, link);
    const result = init(t, ctx);
    assert.equal(result.path, real);
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.equal(readlinkSync(link), real);
    assert.deepEqual(JSON.parse(readFileSync(real, 'utf8')), { theme: 'Dracula', mcpServers: { paddock: EXPECTED_ENTRY.gemini } });
  });

  test('tabs and CRLF of a JSON file are kept', () => {
    const t = target('cursor');
    const original = '{\r\n\t"mcpServers": {\r\n\t\t"a": {\r\n\t\t\t"command": "a"\r\n\t\t}\r\n\t}\r\n}\r\n';
    const text = init(t, fakeHomeWith(t, original)).text;
    assert.equal(text.replace(/\r\n/g, '').includes('\n'), false, 'no bare LF');
    assert.match(text, /\r\n\t\t"paddock": \{\r\n\t\t\t"command"/);
  });

  test('project scope writes the project file, with the plain `paddock` command (the file is shared)', () => {
    const t = target('claude-code');
    const ctx = fakeHome();
    const result = mcpInit({ target: t.name, scope: 'project', ctx, resolveCommand: () => COMMAND });
    assert.equal(result.path, join(ctx.cwd, '.mcp.json'));
    assert.deepEqual(JSON.parse(readFileSync(result.path, 'utf8')), { mcpServers: { paddock: { type: 'stdio', command: 'paddock', args: ['mcp', 'serve'] } } });
    // User scope resolves the executable.
    const user = mcpInit({ target: t.name, ctx, resolveCommand: () => COMMAND });
    assert.equal(user.command, COMMAND);
  });

  test('a second change later makes a second, separate backup', () => {
    const t = target('cursor');
    const ctx = fakeHomeWith(t, '{}');
    init(t, ctx, { command: '/a/paddock' });
    init(t, ctx, { command: '/b/paddock' });
    const file = resolveConfigPath(t, 'user', ctx);
    assert.deepEqual(backupsOf(file).sort(), [`mcp.json.bak-20250304T050607Z`, `mcp.json.bak-20250304T050607Z-1`]);
    assert.equal(backupStamp(NOW), '20250304T050607Z');
  });
});

describe('the command the entry runs', () => {
  const exists = (paths: string[]) => (p: string) => paths.includes(p);

  test('the running paddock, when started as paddock', () => {
    assert.equal(resolvePaddockCommand({ platform: 'linux', env: { PATH: '' }, argv1: '/usr/local/bin/paddock', isExecutable: exists(['/usr/local/bin/paddock']) }), '/usr/local/bin/paddock');
  });

  test('else the first paddock on PATH', () => {
    const ctx = { platform: 'linux', env: { PATH: '/nope:relative/bin:/usr/bin:/opt/bin' }, argv1: '/src/paddock/cli/main.ts', isExecutable: exists(['/usr/bin/paddock', '/opt/bin/paddock']) };
    assert.equal(resolvePaddockCommand(ctx), '/usr/bin/paddock');
  });

  test('on Windows, with PATHEXT', () => {
    const ctx = { platform: 'win32', env: { Path: 'C:\\Windows;C:\\tools', PATHEXT: '.COM;.EXE;.BAT;.CMD' }, isExecutable: exists(['C:\\tools\\paddock.cmd']) };
    assert.equal(resolvePaddockCommand(ctx), 'C:\\tools\\paddock.cmd');
  });

  test('else plain paddock', () => {
    assert.equal(resolvePaddockCommand({ platform: 'linux', env: { PATH: '/usr/bin' }, isExecutable: () => false }), 'paddock');
  });
});

describe('paddock mcp init, through the command line', () => {
  /** Runs `paddock <args>` in a child whose HOME is a fake one. */
  function cli(home: string, args: string[], extra: NodeJS.ProcessEnv = {}) {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ...extra };
    return spawnSync(process.execPath, [join(root, 'cli/main.ts'), ...args], { cwd: home, env, encoding: 'utf8' });
  }

  test('writes the entry, says where, and is idempotent; --print writes nothing', () => {
    const home = fakeHome().homedir;
    const file = join(home, '.cursor', 'mcp.json');

    const printed = cli(home, ['mcp', 'init', 'cursor', '--print']);
    assert.equal(printed.status, 0, printed.stderr);
    // The Node running the CLI and the CLI's own script, by absolute path: no `node` on the app's PATH is needed.
    const entry = JSON.parse(printed.stdout).mcpServers.paddock;
    assert.equal(entry.command, process.execPath);
    assert.deepEqual(entry.args, [join(root, 'cli', 'main.ts'), 'mcp', 'serve']);
    assert.match(printed.stderr, /would be created \(--print: nothing written\)/);
    assert.equal(existsSync(file), false);

    const first = cli(home, ['mcp', 'init', 'cursor', '--command', COMMAND]);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`Created ${file.replaceAll('/', '\\/')}`));
    assert.match(first.stderr, /no base URL or API key yet/);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { mcpServers: { paddock: { command: COMMAND, args: ['mcp', 'serve'] } } });

    const again = cli(home, ['mcp', 'init', 'cursor', '--command', COMMAND, '--json']);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(JSON.parse(again.stdout).status, 'unchanged');
  });

  test('--transport http points the app at /v1/mcp with the key by reference, and back to stdio takes the remote fields out', () => {
    const home = fakeHome().homedir;
    const file = join(home, '.claude.json');
    const configured = { PADDOCK_BASE_URL: 'https://paddock.example', PADDOCK_API_KEY: 'pdk_live_secretvalue123' };
    const remote = cli(home, ['mcp', 'init', 'claude-code', '--transport', 'http'], configured);
    assert.equal(remote.status, 0, remote.stderr);
    const text = readFileSync(file, 'utf8');
    assert.doesNotMatch(text, /pdk_live_/, 'the key itself is never written');
    assert.deepEqual(JSON.parse(text).mcpServers.paddock, { type: 'http', url: 'https://paddock.example/v1/mcp', headers: { Authorization: 'Bearer ${PADDOCK_API_KEY}' } });
    const local = cli(home, ['mcp', 'init', 'claude-code', '--command', COMMAND], configured);
    assert.equal(local.status, 0, local.stderr);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')).mcpServers.paddock, { type: 'stdio', command: COMMAND, args: ['mcp', 'serve'] });
    // A client whose file paddock cannot give a remote entry: exit 2, naming the way out.
    const codex = cli(home, ['mcp', 'init', 'claude-desktop', '--transport', 'http'], configured);
    assert.equal(codex.status, 2);
    assert.match(codex.stderr, /--transport stdio/);
  });

  test('an unknown target fails with the list of valid ones', () => {
    const res = cli(fakeHome().homedir, ['mcp', 'init', 'emacs']);
    assert.equal(res.status, 2);
    assert.match(res.stderr, /Unknown MCP client "emacs"/);
    assert.match(res.stderr, /claude-desktop, claude-code, cursor, windsurf, vscode, codex, gemini, zed/);
  });
});
