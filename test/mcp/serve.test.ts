// `paddock mcp serve`, driven as a client app drives it: a real MCP client over stdio, against a
// real stack, with the API key only in the CLI config file.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { newAccount } from '../helpers/accounts.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

const root = resolve(import.meta.dirname, '../..');
/** `paddock mcp serve` through the CLI, and the server's own entry point. */
const CLI_SERVE = [join(root, 'cli/main.ts'), 'mcp', 'serve'];
const SERVE_MAIN = [join(root, 'cli/mcp/serve-main.ts')];
const TOOLS = ['exec', 'file_create', 'file_delete', 'file_download', 'file_edit', 'file_glob', 'file_grep', 'file_list', 'file_move', 'file_upload', 'file_view', 'preview_create', 'preview_delete', 'preview_list', 'process_list', 'process_output', 'process_start', 'process_stop', 'sandbox_create', 'sandbox_destroy', 'sandbox_get', 'sandbox_list', 'sandbox_network', 'snapshot_create', 'snapshot_delete', 'snapshot_list'];

const stack = await startSandboxStack();
const scratch = mkdtempSync(join(tmpdir(), 'paddock-mcp-serve-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A home whose CLI config holds `config` (TOML text), or none. */
function home(name: string, config?: string): string {
  const dir = join(scratch, name);
  mkdirSync(join(dir, '.config', 'paddock'), { recursive: true });
  if (config !== undefined) writeFileSync(join(dir, '.config', 'paddock', 'config.toml'), config, { mode: 0o600 });
  return dir;
}

/** Starts the server as a client app would (no key in its environment) and connects to it; close it after. */
async function connect(homeDir: string, args = CLI_SERVE): Promise<{ client: Client; stderr: string[] }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('PADDOCK_')) env[k] = v;
  Object.assign(env, { HOME: homeDir, XDG_CONFIG_HOME: join(homeDir, '.config') });
  const transport = new StdioClientTransport({ command: process.execPath, args, env, cwd: root, stderr: 'pipe' });
  const stderr: string[] = [];
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const client = new Client({ name: 'paddock-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr };
}

function textOf(result: unknown): string {
  const r = result as CallToolResult;
  return r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = await client.callTool({ name, arguments: args });
  assert.notEqual(result.isError, true, `${name} failed: ${textOf(result)}`);
  return textOf(result);
}

async function fails(client: Client, name: string, args: Record<string, unknown>, code: string): Promise<string> {
  const result = await client.callTool({ name, arguments: args });
  assert.equal(result.isError, true, `${name} should fail with ${code}: ${textOf(result)}`);
  const text = textOf(result);
  assert.ok(text.includes(`[${code}]`), `${name}: expected ${code}, got: ${text}`);
  return text;
}

describe('paddock mcp serve, configured', () => {
  let client: Client;
  let stderr: string[];
  let key: string;

  before(async () => {
    const account = await newAccount(stack.url, 'mcpserve');
    key = account.key;
    ({ client, stderr } = await connect(home('configured', `base_url = "${stack.url}"\napi_key = "${account.key}"\n`)));
  });
  after(() => client?.close());

  test('lists its tools, each described and with an input schema', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
    for (const tool of tools) {
      assert.ok((tool.description ?? '').length > 30, `${tool.name} has a description`);
      assert.equal(tool.inputSchema.type, 'object');
    }
    const exec = tools.find((t) => t.name === 'exec')!;
    assert.deepEqual(exec.inputSchema.required, ['command']);
    assert.ok(exec.inputSchema.properties?.sandboxId);
    assert.equal(tools.find((t) => t.name === 'sandbox_list')!.annotations?.readOnlyHint, true);
    assert.equal(tools.find((t) => t.name === 'sandbox_destroy')!.annotations?.destructiveHint, true);
    assert.match(client.getInstructions() ?? '', /sandbox_create/);
    // The key is only in the config file; the server never prints it.
    assert.equal(stderr.join('').includes(key), false);
  });

  test('with no active sandbox, a tool that needs one says so', async () => {
    assert.match(await ok(client, 'sandbox_list'), /No active sandboxes/);
    await fails(client, 'exec', { command: 'true' }, 'no_active_sandbox');
  });

  test('creates a sandbox, runs commands and works with files in it, then destroys it', async () => {
    const created = await ok(client, 'sandbox_create', { metadata: { from: 'mcp-test' }, timeoutSeconds: 600 });
    const id = /sbx_[0-9a-z]{24}/.exec(created)?.[0];
    assert.ok(id, created);
    assert.match(created, /running/);
    // Its own timeout: it expires ten minutes after its creation, not at the cap.
    const [, createdAt, expiresAt] = /created (\S+), expires (\S+?)(,|$)/m.exec(created) ?? [];
    assert.equal(Date.parse(expiresAt!) - Date.parse(createdAt!), 600_000, created);
    assert.ok((await ok(client, 'sandbox_list')).includes(id));

    // The only active sandbox is used when sandboxId is left out.
    const echoed = await ok(client, 'exec', { command: 'echo hi' });
    assert.match(echoed, /^exit code 0 /);
    assert.match(echoed, /stdout:\nhi/);
    assert.match(echoed, /stderr: \(empty\)/);

    // A failing command is a result, with stdout and stderr apart; streamed when progress is asked for.
    const progress: unknown[] = [];
    const streamed = await client.callTool(
      { name: 'exec', arguments: { command: 'echo out; sleep 0.3; echo err >&2; sleep 0.3; exit 3', sandboxId: id } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    assert.notEqual(streamed.isError, true);
    assert.match(textOf(streamed), /^exit code 3 /);
    assert.match(textOf(streamed), /stdout:\nout/);
    assert.match(textOf(streamed), /stderr:\nerr/);
    assert.ok(progress.length >= 1, 'progress notifications while streaming');

    assert.match(await ok(client, 'file_create', { path: 'notes/hello.txt', content: 'hello\nworld\n' }), /^Created \/workspace\/notes\/hello\.txt \(12 bytes\)/);
    const viewed = await ok(client, 'file_view', { path: '/workspace/notes/hello.txt' });
    assert.equal(viewed, '/workspace/notes/hello.txt: lines 1-2 of 2\nhello\nworld\n');
    assert.match(await ok(client, 'file_edit', { path: 'notes/hello.txt', oldText: 'world', newText: 'there' }), /Replaced 1 occurrence in/);
    assert.match(await ok(client, 'file_view', { path: 'notes/hello.txt', startLine: 2 }), /lines 2-2 of 2\nthere/);
    await fails(client, 'file_edit', { path: 'notes/hello.txt', oldText: 'absent', newText: 'x' }, 'edit_no_match');
    await fails(client, 'file_create', { path: 'notes/hello.txt', content: 'x', overwrite: false }, 'file_exists');
    assert.match(await ok(client, 'file_list', { path: 'notes' }), /hello\.txt {2}\(12 bytes\)/);
    assert.match(await ok(client, 'file_list'), /^notes\/$/m);
    assert.equal(await ok(client, 'file_glob', { pattern: '**/*.txt' }), '/workspace/notes/hello.txt');
    assert.equal(await ok(client, 'file_grep', { pattern: 'th[e]re', glob: '**/*.txt' }), '/workspace/notes/hello.txt:2: there');
    assert.match(await ok(client, 'exec', { command: 'cat notes/hello.txt' }), /hello\nthere/);

    // API errors come back as tool errors with the API's code and detail; the server lives on.
    await fails(client, 'file_view', { path: 'missing.txt' }, 'file_not_found');
    const notFound = await fails(client, 'exec', { command: 'true', sandboxId: 'sbx_000000000000000000000000' }, 'sandbox_not_found');
    assert.match(notFound, /HTTP 404/);
    // Arguments that do not fit the schema are refused without reaching the API.
    const invalid = await client.callTool({ name: 'file_view', arguments: { startLine: 0 } });
    assert.equal(invalid.isError, true);

    const destroyed = await ok(client, 'sandbox_destroy', { sandboxId: id });
    assert.match(destroyed, new RegExp(`Destroyed sandbox ${id}`));
    assert.match(destroyed, /terminated \(destroyed\)/);
    assert.match(await ok(client, 'sandbox_list'), /No active sandboxes/);
    assert.ok((await ok(client, 'sandbox_list', { state: 'destroyed' })).includes(id));
    await fails(client, 'exec', { command: 'true', sandboxId: id }, 'sandbox_not_running');
  });

  test('with several active sandboxes, sandboxId is needed and the choices are named', async () => {
    // Created with progress asked for: polled until running, each status reported.
    const withProgress = await client.callTool({ name: 'sandbox_create', arguments: {} }, undefined, { onprogress: () => undefined });
    assert.notEqual(withProgress.isError, true, textOf(withProgress));
    assert.match(textOf(withProgress), /running/);
    const a = /sbx_[0-9a-z]{24}/.exec(textOf(withProgress))![0];
    const b = /sbx_[0-9a-z]{24}/.exec(await ok(client, 'sandbox_create'))![0];
    try {
      const text = await fails(client, 'file_list', {}, 'sandbox_ambiguous');
      assert.ok(text.includes(a) && text.includes(b), text);
      // At the concurrent limit (2): the API's 429, as a tool error.
      const limited = await fails(client, 'sandbox_create', {}, 'concurrent_sandbox_limit_reached');
      assert.match(limited, /HTTP 429/);
      assert.match(await ok(client, 'exec', { command: 'echo $0', sandboxId: b }), /exit code 0/);
    } finally {
      await ok(client, 'sandbox_destroy', { sandboxId: a });
      await ok(client, 'sandbox_destroy', { sandboxId: b });
    }
    assert.match(await ok(client, 'sandbox_list'), /No active sandboxes/);
  });
});

describe('paddock mcp serve, not configured', () => {
  test('starts and lists its tools; each call says how to configure the CLI', async (t) => {
    const { client, stderr } = await connect(home('unconfigured'), SERVE_MAIN);
    t.after(() => client.close());
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), TOOLS);
    const text = await fails(client, 'sandbox_list', {}, 'not_configured');
    assert.match(text, /paddock signup|paddock config/);
    assert.match(stderr.join(''), /not configured/);
  });

  test('a refused key is a tool error, not a crash', async (t) => {
    const { client } = await connect(home('badkey', `base_url = "${stack.url}"\napi_key = "pdk_live_nope"\n`));
    t.after(() => client.close());
    await fails(client, 'sandbox_list', {}, 'invalid_credential');
    await fails(client, 'sandbox_list', {}, 'invalid_credential');
  });

  test('an unreachable API is a tool error', async (t) => {
    const { client } = await connect(home('unreachable', 'base_url = "http://127.0.0.1:9"\napi_key = "pdk_live_x"\n'));
    t.after(() => client.close());
    await fails(client, 'sandbox_list', {}, 'connection_failed');
  });
});
