// Remote MCP under load from several tenants behind one address. Its tool calls used to come back
// to the API over loopback from the server's own address, so they all counted against one
// per-address connection allowance: one account holding long exec tool calls cut every other
// account's MCP off, with "connection_failed: Could not reach http://127.0.0.1:<port>" in its tool
// errors. Now the calls are answered in the process (api/in-process-fetch.ts), never through the
// public listener, and the MCP messages have an in-flight cap per account of their own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { call } from '../helpers/http.ts';
import { newAccount } from '../helpers/accounts.ts';
import { eventually } from '../helpers/eventually.ts';

// test-plan: once (a client of the HTTP API: what the runtime behind it does is the API suites' to
// test on both runtimes, in test/exec, test/files and test/sandboxes)

const MCP_PER_ACCOUNT = 3;
const stack = await startSandboxStack({
  overrides: {
    // Fewer than one account's held calls and their tool calls together.
    PADDOCK_HTTP_MAX_CONNECTIONS_PER_IP: '4',
    PADDOCK_INFLIGHT_MCP_PER_ACCOUNT: String(MCP_PER_ACCOUNT),
  },
});
const { port } = new URL(stack.url);

async function connect(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('/v1/mcp', stack.url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  const client = new Client({ name: 'paddock-remote-limits-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const textOf = (r: unknown) => ((r as CallToolResult).content as { type: string; text: string }[]).map((c) => c.text).join('\n');

async function sandboxOf(key: string): Promise<string> {
  const created = await call(stack.url, 'POST', '/v1/sandboxes', { token: key, body: {} });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id as string;
}

test("one account holding long exec tool calls does not cut another's MCP off; the excess is refused 429 too_many_in_flight; no tool error names an internal address", async (t) => {
  const [holder, neighbour] = await Promise.all([newAccount(stack.url, 'mcpholder'), newAccount(stack.url, 'mcpneighbour')]);
  const [holderSandbox, neighbourSandbox] = await Promise.all([sandboxOf(holder.key), sandboxOf(neighbour.key)]);
  // Tool calls reaching the public listener (by their user agent): there should be none.
  let throughListener = 0;
  const count = (req: IncomingMessage) => {
    if (req.headers['user-agent']?.startsWith('paddock-remote-mcp')) throughListener++;
  };
  stack.apis[0]!.server.on('request', count);
  t.after(() => stack.apis[0]!.server.off('request', count));

  const [holding, other] = await Promise.all([connect(holder.key), connect(neighbour.key)]);
  t.after(() => Promise.all([holding.close(), other.close()]));
  const texts: string[] = [];

  // As many long commands as the account may have messages in flight.
  const held = Array.from({ length: MCP_PER_ACCOUNT }, () =>
    holding.callTool({ name: 'exec', arguments: { sandboxId: holderSandbox, command: 'sleep 4; echo held-done' } }),
  );
  // One more message is refused, with the cap's own error, while they run.
  const refused = await eventually('a message past the cap is refused', 15_000, async () => {
    try {
      texts.push(textOf(await holding.callTool({ name: 'sandbox_list', arguments: {} })));
      return undefined; // not all held yet
    } catch (err) {
      return err;
    }
  });
  assert.ok(refused instanceof StreamableHTTPError, String(refused));
  assert.equal(refused.code, 429);
  assert.match(refused.message, /"code":"too_many_in_flight"/);
  assert.match(refused.message, /"scope":"account"/);

  // Meanwhile the neighbour, from the same address, is served: commands, reads, and the refusal
  // of another account's sandbox, as a tool error.
  const ran = await other.callTool({ name: 'exec', arguments: { sandboxId: neighbourSandbox, command: 'echo neighbour-$((6*7))' } });
  assert.notEqual(ran.isError, true, textOf(ran));
  assert.match(textOf(ran), /neighbour-42/);
  const listed = await other.callTool({ name: 'sandbox_list', arguments: {} });
  assert.match(textOf(listed), new RegExp(neighbourSandbox));
  const foreign = await other.callTool({ name: 'exec', arguments: { sandboxId: holderSandbox, command: 'id' } });
  assert.equal(foreign.isError, true);
  assert.match(textOf(foreign), /\[sandbox_not_found\]/);
  texts.push(textOf(ran), textOf(listed), textOf(foreign));

  for (const result of await Promise.all(held)) {
    assert.notEqual(result.isError, true, textOf(result));
    assert.match(textOf(result), /held-done/);
    texts.push(textOf(result));
  }
  // Once they are done, the account has its places back.
  const after = await holding.callTool({ name: 'sandbox_get', arguments: { sandboxId: holderSandbox } });
  assert.notEqual(after.isError, true, textOf(after));
  texts.push(textOf(after));

  assert.equal(throughListener, 0, 'tool calls came back through the public listener');
  for (const text of texts) assert.doesNotMatch(text, new RegExp(`127\\.0\\.0\\.1|localhost|:${port}\\b`), text);
});

/** A command run directly (not through MCP): its stdout. */
async function run(key: string, sandboxId: string, command: string): Promise<string> {
  const res = await call(stack.url, 'POST', `/v1/sandboxes/${sandboxId}/exec`, { token: key, body: { command: ['sh', '-c', command] } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.stdout as string;
}

test('through the in-process calls a streamed exec is read whole, and calls their client gives up stop their commands and free their places', async (t) => {
  const account = await newAccount(stack.url, 'mcpgiveup');
  const sandboxId = await sandboxOf(account.key);
  const client = await connect(account.key);
  t.after(() => client.close());

  // With a progress token the exec tool reads the command's output as a stream (NDJSON, here in
  // process), and answers what it read. (The notifications themselves stay on the server: /v1/mcp
  // answers in JSON, not as an event stream.)
  const streamed = await client.callTool({ name: 'exec', arguments: { sandboxId, command: 'for i in 1 2 3; do echo tick-$i; sleep 0.2; done' } }, undefined, {
    onprogress: () => undefined,
  });
  assert.notEqual(streamed.isError, true, textOf(streamed));
  assert.match(textOf(streamed), /tick-1\ntick-2\ntick-3/);

  // As many long commands as the account may have messages in flight, then given up: the client
  // goes, its requests with it. (A cancellation notification cannot stop them: it comes as a
  // request of its own, which a stateless server cannot tie to the one it cancels.)
  const quitter = await connect(account.key);
  const given = Array.from({ length: MCP_PER_ACCOUNT }, (_, i) =>
    quitter.callTool({ name: 'exec', arguments: { sandboxId, command: `echo $$ > /tmp/given-${i}; exec sleep 60` } }).catch((err: unknown) => err),
  );
  await eventually('the commands run', 15_000, async () => ((await run(account.key, sandboxId, 'cat /tmp/given-* 2>/dev/null | wc -l')).trim() === String(MCP_PER_ACCOUNT) ? true : undefined));
  await quitter.close();
  await Promise.all(given);
  await eventually('the given-up commands are stopped', 15_000, async () => {
    const alive = await run(account.key, sandboxId, 'for f in /tmp/given-*; do kill -0 "$(cat "$f")" 2>/dev/null && echo alive; done; true');
    return alive.includes('alive') ? undefined : true;
  });
  // Their places are free again: as many messages at once are all served.
  const again = await Promise.all(Array.from({ length: MCP_PER_ACCOUNT }, () => client.callTool({ name: 'sandbox_get', arguments: { sandboxId } })));
  for (const r of again) assert.notEqual(r.isError, true, textOf(r));
});
