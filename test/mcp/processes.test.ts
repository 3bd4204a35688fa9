// The MCP tools for background processes (process_start, process_list, process_output,
// process_stop), for exposing their ports (preview_create, preview_list, preview_delete) and for
// keeping a workspace (snapshot_create, snapshot_list, snapshot_delete, sandbox_create's snapshot)
// over the remote transport at /v1/mcp, against a real stack: start a server-like process, read
// its logs, wait for one to end, stop one; another account's process is unknown; a server's port
// exposed answers at the URL the tool gives; a snapshot's files are in the sandbox made from it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { newAccount } from '../helpers/accounts.ts';
import { call } from '../helpers/http.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';
import { fetchPreviewUrl } from '../helpers/preview-fetch.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '3' } });

async function connect(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('/v1/mcp', stack.url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  const client = new Client({ name: 'paddock-process-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const textOf = (r: unknown) => ((r as CallToolResult).content as { type: string; text: string }[]).map((c) => c.text).join('\n');

async function ok(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.notEqual(r.isError, true, `${name}: ${textOf(r)}`);
  return r;
}

test('start a server, read its logs, wait for a job to end, stop the server', async (t) => {
  const account = await newAccount(stack.url, 'mcpproc');
  const client = await connect(account.key);
  t.after(() => client.close());
  const sandboxId = (await createSandbox(stack.url, account.key)).body.id as string;

  const server = await ok(client, 'process_start', { command: 'echo "listening on 8000"; while :; do sleep 1; done' });
  const serverId = (server.structuredContent as { id: string }).id;
  assert.match(serverId, /^proc_[0-9a-z]{24}$/);
  assert.match(textOf(server), new RegExp(`${serverId} in sandbox ${sandboxId}`));

  const logs = await eventually('the server logs', 10_000, async () => {
    const r = await ok(client, 'process_output', { processId: serverId });
    return (r.structuredContent as { stdout: string }).stdout === 'listening on 8000\n' ? r : undefined;
  });
  assert.equal((logs.structuredContent as { running: boolean }).running, true);
  assert.match(textOf(logs), /still running/);

  const job = (await ok(client, 'process_start', { command: 'sleep 1; echo done; exit 4', sandboxId })).structuredContent as { id: string };
  const waited = await ok(client, 'process_output', { processId: job.id, waitSeconds: 30 });
  assert.deepEqual(waited.structuredContent, { stdout: 'done\n', stderr: '', running: false, exitCode: 4, signal: null });
  // A wait that ends first answers what the process printed so far.
  const t0 = Date.now();
  const short = await ok(client, 'process_output', { processId: serverId, waitSeconds: 1 });
  assert.ok(Date.now() - t0 < 10_000);
  assert.equal((short.structuredContent as { stdout: string }).stdout, 'listening on 8000\n');

  const listed = textOf(await ok(client, 'process_list', {}));
  assert.match(listed, new RegExp(`${serverId}: running`));
  assert.match(listed, new RegExp(`${job.id}: exited with code 4`));

  const stopped = await ok(client, 'process_stop', { processId: serverId });
  assert.match(textOf(stopped), new RegExp(`${serverId}: ended by SIGTERM`));

  // Another account's process, named in its own sandbox: unknown.
  const other = await newAccount(stack.url, 'mcpother');
  const otherClient = await connect(other.key);
  t.after(() => otherClient.close());
  await createSandbox(stack.url, other.key);
  const foreign = (await otherClient.callTool({ name: 'process_stop', arguments: { processId: job.id, signal: 'KILL' } })) as CallToolResult;
  assert.equal(foreign.isError, true);
  assert.match(textOf(foreign), /\[process_not_found\]/);
  const foreignSandbox = (await otherClient.callTool({ name: 'process_list', arguments: { sandboxId } })) as CallToolResult;
  assert.match(textOf(foreignSandbox), /\[sandbox_not_found\]/);
});

test("expose a server's port: the URL answers with the token or the signed URL, public without; listed; removed", async (t) => {
  const account = await newAccount(stack.url, 'mcppreview');
  const client = await connect(account.key);
  t.after(() => client.close());
  const sandboxId = (await createSandbox(stack.url, account.key)).body.id as string;
  await ok(client, 'process_start', { command: 'python3 -m http.server 8000 --bind 127.0.0.1' });
  await eventually('the server', 20_000, async () => {
    const r = await client.callTool({ name: 'exec', arguments: { command: "python3 -c \"import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/', timeout=2)\"" } });
    // A command that ran and failed is no tool error: its exit code says whether the server answered.
    return (r as CallToolResult).structuredContent?.exitCode === 0 ? true : undefined;
  });

  const made = await ok(client, 'preview_create', { port: 8000 });
  const p = made.structuredContent as { port: number; url: string; public: boolean; signedUrl: string; token: string; expiresAt: string };
  // The API's own port, though the tool's call was answered inside the service.
  assert.equal(p.url, `http://8000-${sandboxId.slice(4)}.localhost:${new URL(stack.url).port}/`);
  assert.equal(p.public, false);
  assert.equal(p.signedUrl, `${p.url}?paddock_preview_token=${p.token}`);
  assert.ok(textOf(made).includes(p.signedUrl) && textOf(made).includes(`X-Paddock-Preview-Token: ${p.token}`), textOf(made));
  assert.equal((await fetchPreviewUrl(p.url, { 'x-paddock-preview-token': p.token })).status, 200);
  assert.equal((await fetchPreviewUrl(p.signedUrl)).status, 303);
  assert.equal((await fetchPreviewUrl(p.url)).status, 401);

  const pub = await ok(client, 'preview_create', { port: 8000, sandboxId, public: true });
  assert.deepEqual(Object.keys(pub.structuredContent!).sort(), ['expiresAt', 'port', 'public', 'url']);
  assert.equal((await fetchPreviewUrl(p.url)).status, 200);
  assert.match(textOf(await ok(client, 'preview_list', {})), new RegExp(`^port 8000: ${p.url.replaceAll('.', '\\.')} \\(public\\)$`));

  assert.match(textOf(await ok(client, 'preview_delete', { port: 8000 })), /Removed the preview of port 8000/);
  assert.equal((await fetchPreviewUrl(p.url)).status, 401);
  assert.equal(textOf(await ok(client, 'preview_list', { sandboxId })), 'No previews.');
  const again = (await client.callTool({ name: 'preview_delete', arguments: { port: 8000 } })) as CallToolResult;
  assert.equal(again.isError, true);
  assert.match(textOf(again), /\[preview_not_found\]/);
});

test("snapshot a sandbox's workspace, start another from it, list and delete the snapshot; another account's is unknown", async (t) => {
  const account = await newAccount(stack.url, 'mcpsnap');
  const client = await connect(account.key);
  t.after(() => client.close());
  assert.equal(textOf(await ok(client, 'snapshot_list', {})), 'No snapshots.');
  const created = await createSandbox(stack.url, account.key);
  const sandboxId = created.body.id as string;
  await ok(client, 'exec', { command: 'echo kept > /workspace/kept.txt', sandboxId });
  const made = await ok(client, 'snapshot_create', { sandboxId, name: 'mcp' });
  const snap = made.structuredContent as { id: string; status: string; name: string; sandboxId: string; sizeBytes: number; files: number };
  assert.deepEqual([snap.status, snap.name, snap.sandboxId], ['ready', 'mcp', sandboxId]);
  assert.match(snap.id, /^snap_/);
  assert.ok(snap.sizeBytes > 0 && snap.files >= 1, JSON.stringify(snap));
  assert.match(textOf(made), new RegExp(`^Snapshot ${snap.id} of sandbox ${sandboxId}: `));
  // The one active sandbox when sandboxId is left out, as for the other tools.
  const implied = (await ok(client, 'snapshot_create', {})).structuredContent as { id: string; sandboxId: string; name: string | null };
  assert.deepEqual([implied.sandboxId, implied.name], [sandboxId, null]);
  await ok(client, 'snapshot_delete', { snapshotId: implied.id });
  assert.match(textOf(await ok(client, 'snapshot_list', {})), new RegExp(`^${snap.id} \\(mcp\\): ready, from ${sandboxId}`, 'm'));
  const forked = (await ok(client, 'sandbox_create', { snapshot: snap.id })).structuredContent as { id: string };
  assert.equal((((await ok(client, 'exec', { command: 'cat /workspace/kept.txt', sandboxId: forked.id })).structuredContent) as { stdout: string }).stdout, 'kept\n');

  const other = await newAccount(stack.url, 'mcpsnap-other');
  const otherClient = await connect(other.key);
  t.after(() => otherClient.close());
  const foreign = (await otherClient.callTool({ name: 'snapshot_delete', arguments: { snapshotId: snap.id } })) as CallToolResult;
  assert.equal(foreign.isError, true);
  assert.match(textOf(foreign), /snapshot_not_found/);
  const foreignStart = (await otherClient.callTool({ name: 'sandbox_create', arguments: { snapshot: snap.id } })) as CallToolResult;
  assert.equal(foreignStart.isError, true);
  assert.match(textOf(foreignStart), /\[snapshot_not_found\]/);
  const foreignTake = (await otherClient.callTool({ name: 'snapshot_create', arguments: { sandboxId } })) as CallToolResult;
  assert.equal(foreignTake.isError, true);
  assert.match(textOf(foreignTake), /\[sandbox_not_found\]/);
  await ok(client, 'snapshot_delete', { snapshotId: snap.id });
  assert.equal(textOf(await ok(client, 'snapshot_list', {})), 'No snapshots.');
  const gone = (await client.callTool({ name: 'sandbox_create', arguments: { snapshot: snap.id } })) as CallToolResult;
  assert.equal(gone.isError, true);
  assert.match(textOf(gone), /\[snapshot_not_found\]/);
  // The sandbox made from it keeps its workspace.
  assert.equal((((await ok(client, 'exec', { command: 'cat /workspace/kept.txt', sandboxId: forked.id })).structuredContent) as { stdout: string }).stdout, 'kept\n');
  for (const id of [sandboxId, forked.id]) await ok(client, 'sandbox_destroy', { sandboxId: id });

  // One that keeps its workspace when destroyed: sandbox_get names the snapshot afterwards.
  const keeping = (await ok(client, 'sandbox_create', { snapshotOnDestroy: true })).structuredContent as { id: string };
  assert.match(textOf(await ok(client, 'sandbox_get', { sandboxId: keeping.id })), /snapshotted when destroyed/);
  await ok(client, 'exec', { command: 'echo final > /workspace/final.txt', sandboxId: keeping.id });
  await ok(client, 'sandbox_destroy', { sandboxId: keeping.id });
  const final = /final snapshot (snap_[0-9a-z]+)/.exec(textOf(await ok(client, 'sandbox_get', { sandboxId: keeping.id })))?.[1];
  assert.ok(final, 'sandbox_get names the final snapshot');
  const resumed = (await ok(client, 'sandbox_create', { snapshot: final })).structuredContent as { id: string };
  assert.equal((((await ok(client, 'exec', { command: 'cat /workspace/final.txt', sandboxId: resumed.id })).structuredContent) as { stdout: string }).stdout, 'final\n');
  await ok(client, 'sandbox_destroy', { sandboxId: resumed.id });
});

test("a sandbox's network through MCP: sandbox_create's allow, sandbox_get shows it, sandbox_network changes it; egress and allow together refused; a key without network:write may not open one", async (t) => {
  const account = await newAccount(stack.url, 'mcpnet');
  const client = await connect(account.key);
  t.after(() => client.close());
  const made = (await ok(client, 'sandbox_create', { allow: ['198.51.100.0/24:443'] })).structuredContent as { id: string };
  assert.match(textOf(await ok(client, 'sandbox_get', { sandboxId: made.id })), /network allow 198\.51\.100\.0\/24:443/);
  assert.match(textOf(await ok(client, 'sandbox_network', { sandboxId: made.id, egress: 'none' })), new RegExp(`Sandbox ${made.id} egress: none`));
  assert.match(textOf(await ok(client, 'sandbox_get', { sandboxId: made.id })), /network none/);
  const both = (await client.callTool({ name: 'sandbox_network', arguments: { sandboxId: made.id, egress: 'all', allow: ['203.0.113.9'] } })) as CallToolResult;
  assert.equal(both.isError, true);
  assert.match(textOf(both), /not both/);
  const named = (await client.callTool({ name: 'sandbox_network', arguments: { sandboxId: made.id, allow: ['*.org'] } })) as CallToolResult;
  assert.equal(named.isError, true);
  assert.match(textOf(named), /\[invalid_request\]/);

  const agentKey = await call(stack.url, 'POST', '/v1/api-keys', { token: account.token, body: { name: 'agent', scopes: ['sandboxes:read', 'sandboxes:write', 'exec'] } });
  const agent = await connect(agentKey.body.key);
  t.after(() => agent.close());
  const opened = (await agent.callTool({ name: 'sandbox_network', arguments: { sandboxId: made.id, egress: 'all' } })) as CallToolResult;
  assert.equal(opened.isError, true);
  assert.match(textOf(opened), /\[insufficient_scope\]/);
  await ok(client, 'sandbox_destroy', { sandboxId: made.id });
});
