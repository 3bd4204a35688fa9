import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseToml } from 'smol-toml';
import { startTestApi } from '../helpers/stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';
import { runAuthSuite } from '../helpers/auth-suite.ts';
import { MCP_TARGET_NAMES } from '../../shared/mcp/targets.ts';

const api = await startTestApi();
const account = await newAccount(api.url, 'mcpconfig');
const get = (query: string, token: string | undefined = account.key) => call(api.url, 'GET', `/v1/mcp/config${query}`, { token });

describe('GET /v1/mcp/config', () => {
  runAuthSuite({ api, method: 'GET', path: '/v1/mcp/config?target=cursor', credential: 'apiKey', okStatus: 200 });

  test('answers where the client keeps its file, per OS, its format and the entry to merge', async () => {
    const res = await get('?target=claude-desktop');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(res.body, {
      target: 'claude-desktop',
      scope: 'user',
      path: {
        macos: '~/Library/Application Support/Claude/claude_desktop_config.json',
        linux: '~/.config/Claude/claude_desktop_config.json',
        windows: '%APPDATA%\\Claude\\claude_desktop_config.json',
      },
      format: 'json',
      transport: 'stdio',
      snippet: `${JSON.stringify({ mcpServers: { paddock: { command: 'paddock', args: ['mcp', 'serve'] } } }, null, 2)}\n`,
    });
  });

  test('transport=http answers the remote entry for this API, the key named by reference only', async () => {
    const res = await get('?target=cursor&transport=http');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.transport, 'http');
    assert.deepEqual(JSON.parse(res.body.snippet), { mcpServers: { paddock: { url: `${api.url}/v1/mcp`, headers: { Authorization: 'Bearer ${env:PADDOCK_API_KEY}' } } } });
    const codex = await get('?target=codex&transport=http');
    assert.equal(codex.status, 200);
    assert.deepEqual(JSON.parse(JSON.stringify(parseToml(codex.body.snippet))), { mcp_servers: { paddock: { url: `${api.url}/v1/mcp`, bearer_token_env_var: 'PADDOCK_API_KEY' } } });
    assertProblem(await get('?target=claude-desktop&transport=http'), 400, 'invalid_request');
    assertProblem(await get('?target=cursor&transport=carrier-pigeon'), 400, 'invalid_request');
  });

  test('every client: its own key and entry shape, and never the API key', async () => {
    const expected: Record<string, { format: string; entry: (doc: any) => unknown; shape: Record<string, unknown> }> = {
      'claude-desktop': { format: 'json', entry: (d) => d.mcpServers.paddock, shape: { command: 'paddock', args: ['mcp', 'serve'] } },
      'claude-code': { format: 'json', entry: (d) => d.mcpServers.paddock, shape: { type: 'stdio', command: 'paddock', args: ['mcp', 'serve'] } },
      cursor: { format: 'json', entry: (d) => d.mcpServers.paddock, shape: { command: 'paddock', args: ['mcp', 'serve'] } },
      windsurf: { format: 'json', entry: (d) => d.mcpServers.paddock, shape: { command: 'paddock', args: ['mcp', 'serve'] } },
      vscode: { format: 'jsonc', entry: (d) => d.servers.paddock, shape: { type: 'stdio', command: 'paddock', args: ['mcp', 'serve'] } },
      codex: { format: 'toml', entry: (d) => d.mcp_servers.paddock, shape: { command: 'paddock', args: ['mcp', 'serve'] } },
      gemini: { format: 'json', entry: (d) => d.mcpServers.paddock, shape: { command: 'paddock', args: ['mcp', 'serve'] } },
      zed: {
        format: 'jsonc',
        entry: (d) => d.context_servers.paddock,
        shape: { source: 'custom', command: 'paddock', args: ['mcp', 'serve'], env: {} },
      },
    };
    assert.deepEqual(Object.keys(expected).sort(), [...MCP_TARGET_NAMES].sort());
    for (const [target, want] of Object.entries(expected)) {
      const res = await get(`?target=${target}`);
      assert.equal(res.status, 200, `${target}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.target, target);
      assert.equal(res.body.format, want.format, target);
      assert.deepEqual(Object.keys(res.body.path).sort(), ['linux', 'macos', 'windows']);
      const doc = want.format === 'toml' ? JSON.parse(JSON.stringify(parseToml(res.body.snippet))) : JSON.parse(res.body.snippet);
      assert.deepEqual(want.entry(doc), want.shape, target);
      assert.equal(res.body.snippet.includes(account.key), false);
      assert.equal(/pdk_live_/.test(JSON.stringify(res.body)), false);
    }
    const codex = await get('?target=codex');
    assert.equal(codex.body.snippet, '[mcp_servers.paddock]\ncommand = "paddock"\nargs = [ "mcp", "serve" ]\n');
    assert.deepEqual(codex.body.path, { macos: '~/.codex/config.toml', linux: '~/.codex/config.toml', windows: '%USERPROFILE%\\.codex\\config.toml' });
  });

  test('scope=project answers the project file, for the clients that have one', async () => {
    const res = await get('?target=claude-code&scope=project');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.scope, 'project');
    assert.deepEqual(res.body.path, { macos: '.mcp.json', linux: '.mcp.json', windows: '.mcp.json' });
    const vscode = await get('?target=vscode&scope=project');
    assert.deepEqual(vscode.body.path, { macos: '.vscode/mcp.json', linux: '.vscode/mcp.json', windows: '.vscode\\mcp.json' });

    const none = await get('?target=claude-desktop&scope=project');
    assertProblem(none, 400, 'invalid_request');
    assert.match(none.body.detail, /claude-desktop has no project scope/);
    assertProblem(await get('?target=cursor&scope=global'), 400, 'invalid_request');
  });

  test('an unknown or missing target answers 400 invalid_request, listing the valid ones', async () => {
    for (const query of ['?target=emacs', '?target=', '']) {
      const res = await get(query);
      assertProblem(res, 400, 'invalid_request');
      assert.match(res.body.detail, /^query\.target: /);
      assert.match(res.body.detail, /claude-desktop, claude-code, cursor, windsurf, vscode, codex, gemini, zed/, query);
    }
    assertProblem(await get('?target=cursor&extra=1'), 400, 'invalid_request');
  });

  test('is in the account bucket, with its rate-limit headers', async () => {
    const res = await get('?target=cursor');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('x-ratelimit-limit') ?? '', /^\d+$/);
    assert.match(res.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/);
  });

  test('is in the OpenAPI document with its query parameters', async () => {
    const res = await call(api.url, 'GET', '/v1/openapi.json');
    const op = res.body.paths['/v1/mcp/config'].get;
    assert.deepEqual(op.security, [{ apiKey: ['sandboxes:read'] }]);
    assert.equal(op['x-required-scope'], 'sandboxes:read');
    assert.equal(op['x-rate-limit-bucket'], 'account');
    const target = op.parameters.find((p: { name: string }) => p.name === 'target');
    assert.equal(target.required, true);
    assert.deepEqual(target.schema.enum, [...MCP_TARGET_NAMES]);
  });
});
