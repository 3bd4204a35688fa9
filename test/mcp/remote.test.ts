// Remote MCP at /v1/mcp (docs/api.md, "Remote MCP"): a real MCP client over Streamable HTTP, with the
// API key in a header, against a real stack on both runtimes; the tools meet the key's scopes and
// the tenant checks exactly as direct calls do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { assertProblem, newAccount } from '../helpers/accounts.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '3' } });

async function connect(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('/v1/mcp', stack.url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  const client = new Client({ name: 'paddock-remote-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const textOf = (r: unknown) => ((r as CallToolResult).content as { type: string; text: string }[]).map((c) => c.text).join('\n');

test('a remote MCP client lists the tools of `paddock mcp serve` and runs a sandbox through them', async (t) => {
  const account = await newAccount(stack.url, 'remotemcp');
  const client = await connect(account.key);
  t.after(() => client.close());
  const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
  for (const name of ['exec', 'file_create', 'file_view', 'sandbox_create', 'sandbox_destroy', 'sandbox_list']) assert.ok(tools.includes(name), name);
  const created = await client.callTool({ name: 'sandbox_create', arguments: {} });
  assert.notEqual(created.isError, true, textOf(created));
  const id = /sbx_[a-z0-9]+/.exec(textOf(created))![0];
  const ran = await client.callTool({ name: 'exec', arguments: { sandboxId: id, command: 'echo remote-$((6*7))' } });
  assert.notEqual(ran.isError, true, textOf(ran));
  assert.match(textOf(ran), /remote-42/);
  // The sandbox is the account's own, through the API as directly.
  const direct = await call(stack.url, 'GET', `/v1/sandboxes/${id}`, { token: account.key });
  assert.equal(direct.status, 200);
  const destroyed = await client.callTool({ name: 'sandbox_destroy', arguments: { sandboxId: id } });
  assert.notEqual(destroyed.isError, true, textOf(destroyed));
});

test('the tools a peer offers: structured results, binary files both ways, move and delete, a timeout as an error, an idempotent create', async (t) => {
  const account = await newAccount(stack.url, 'remotetools');
  const client = await connect(account.key);
  t.after(() => client.close());
  const first = await client.callTool({ name: 'sandbox_create', arguments: { idempotencyKey: 'agent-run-1' } });
  const again = await client.callTool({ name: 'sandbox_create', arguments: { idempotencyKey: 'agent-run-1' } });
  const id = (first.structuredContent as { id: string }).id;
  assert.equal((again.structuredContent as { id: string }).id, id, 'the retried create answers the same sandbox');
  const got = await client.callTool({ name: 'sandbox_get', arguments: { sandboxId: id } });
  assert.equal((got.structuredContent as { status: string }).status, 'running');

  const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const up = await client.callTool({ name: 'file_upload', arguments: { sandboxId: id, path: 'bin/all.bytes', contentBase64: bytes.toString('base64') } });
  assert.notEqual(up.isError, true, textOf(up));
  const moved = await client.callTool({ name: 'file_move', arguments: { sandboxId: id, from: 'bin/all.bytes', to: 'moved.bytes' } });
  assert.notEqual(moved.isError, true, textOf(moved));
  // The name given, exactly: what is there already stays unless overwrite says otherwise.
  await client.callTool({ name: 'file_upload', arguments: { sandboxId: id, path: 'other.bytes', contentBase64: 'AA==' } });
  const onto = await client.callTool({ name: 'file_move', arguments: { sandboxId: id, from: 'other.bytes', to: 'moved.bytes' } });
  assert.equal(onto.isError, true);
  assert.match(textOf(onto), /file_exists/);
  const down = await client.callTool({ name: 'file_download', arguments: { sandboxId: id, path: 'moved.bytes' } });
  assert.notEqual(down.isError, true, textOf(down));
  assert.deepEqual(Buffer.from((down.structuredContent as { contentBase64: string }).contentBase64, 'base64'), bytes);
  const deleted = await client.callTool({ name: 'file_delete', arguments: { sandboxId: id, path: 'moved.bytes' } });
  assert.notEqual(deleted.isError, true, textOf(deleted));
  const gone = await client.callTool({ name: 'file_download', arguments: { sandboxId: id, path: 'moved.bytes' } });
  assert.equal(gone.isError, true);
  const twice = await client.callTool({ name: 'file_delete', arguments: { sandboxId: id, path: 'moved.bytes' } });
  assert.notEqual(twice.isError, true, 'deleting what does not exist is not an error');
  const folder = await client.callTool({ name: 'file_delete', arguments: { sandboxId: id, path: 'bin' } });
  assert.notEqual(folder.isError, true, textOf(folder));

  const ran = await client.callTool({ name: 'exec', arguments: { sandboxId: id, command: 'echo out; echo err >&2; exit 3' } });
  assert.notEqual(ran.isError, true, 'a non-zero exit is a result, not a tool error');
  assert.deepEqual({ ...(ran.structuredContent as object), durationMs: 0 }, { exitCode: 3, timedOut: false, stdout: 'out\n', stderr: 'err\n', durationMs: 0 });
  const slow = await client.callTool({ name: 'exec', arguments: { sandboxId: id, command: 'sleep 30', timeoutSeconds: 1 } });
  assert.equal(slow.isError, true, 'a command that ran out of time is an error');
  assert.equal((slow.structuredContent as { timedOut: boolean }).timedOut, true);
});

test("another account's sandbox is not found through a tool, and a key's scopes hold", async (t) => {
  const [owner, stranger] = await Promise.all([newAccount(stack.url, 'remoteowner'), newAccount(stack.url, 'remotestranger')]);
  const sandbox = await call(stack.url, 'POST', '/v1/sandboxes', { token: owner.key, body: {} });
  assert.equal(sandbox.status, 201);
  const client = await connect(stranger.key);
  t.after(() => client.close());
  const foreign = await client.callTool({ name: 'exec', arguments: { sandboxId: sandbox.body.id, command: 'id' } });
  assert.equal(foreign.isError, true);
  assert.match(textOf(foreign), /\[sandbox_not_found\]/);
  // A key that may read but not run commands: the exec tool is refused by the API itself.
  const minted = await call(stack.url, 'POST', '/v1/api-keys', { token: owner.token, body: { name: 'read-only', scopes: ['sandboxes:read'] } });
  assert.equal(minted.status, 201, JSON.stringify(minted.body));
  const readOnly = await connect(minted.body.key);
  t.after(() => readOnly.close());
  const listed = await readOnly.callTool({ name: 'sandbox_list', arguments: {} });
  assert.match(textOf(listed), new RegExp(sandbox.body.id));
  const refused = await readOnly.callTool({ name: 'exec', arguments: { sandboxId: sandbox.body.id, command: 'id' } });
  assert.equal(refused.isError, true);
  assert.match(textOf(refused), /\[insufficient_scope\]/);
});

test('/v1/mcp: no key is 401, GET and DELETE are 405 (stateless), a body that is not JSON-RPC is 400', async () => {
  const account = await newAccount(stack.url, 'remotemcpbad');
  assertProblem(await call(stack.url, 'POST', '/v1/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } }), 401, 'missing_credential');
  for (const method of ['GET', 'DELETE'] as const) {
    const res = await call(stack.url, method, '/v1/mcp', { token: account.key });
    // (No route: the router's own 405, before any credential is looked at.)
    assertProblem(res, 405, 'method_not_allowed');
    assert.equal(res.headers.get('allow'), 'POST');
  }
  assertProblem(await call(stack.url, 'POST', '/v1/mcp', { token: account.key, body: { hello: 'world' } }), 400, 'invalid_request');
  assertProblem(await call(stack.url, 'POST', '/v1/mcp', { token: account.key, body: [{ jsonrpc: '2.0', id: 1, method: 'ping' }] }), 400, 'invalid_request');
  const html = await call(stack.url, 'POST', '/v1/mcp', { token: account.key, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'text/html' } });
  assertProblem(html, 406, 'not_acceptable');
  // A client that only accepts JSON (curl) is answered in JSON.
  const plain = await call(stack.url, 'POST', '/v1/mcp', { token: account.key, body: { jsonrpc: '2.0', id: 7, method: 'tools/list' } });
  assert.equal(plain.status, 200, JSON.stringify(plain.body));
  assert.equal(plain.body.id, 7);
  assert.ok(plain.body.result.tools.length >= 10);
  // Any JSON media type our reader takes is taken here too; an unknown protocol version is a 400 problem.
  const merge = await call(stack.url, 'POST', '/v1/mcp', { token: account.key, body: { jsonrpc: '2.0', id: 8, method: 'tools/list' }, headers: { 'content-type': 'application/merge-patch+json' } });
  assert.equal(merge.status, 200, JSON.stringify(merge.body));
  const version = await call(stack.url, 'POST', '/v1/mcp', { token: account.key, body: { jsonrpc: '2.0', id: 9, method: 'tools/list' }, headers: { 'mcp-protocol-version': '1999-01-01' } });
  assertProblem(version, 400, 'invalid_request');
});
