// The MCP tools for background processes (process_start, process_list, process_output,
// process_stop) over the remote transport at /v1/mcp, against a real stack on both runtimes:
// start a server-like process, read its logs, wait for one to end, stop one; another account's
// process is unknown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { newAccount } from '../helpers/accounts.ts';
import { createSandbox } from '../helpers/sandboxes.ts';
import { eventually } from '../helpers/eventually.ts';

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
