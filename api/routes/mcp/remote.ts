import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ApiError, type ErrorCode } from '../../../shared/errors.ts';
import { createPaddockMcpServer } from '../../../shared/mcp/tools.ts';
import { PaddockClient } from '../../../shared/sdk/index.ts';
import type { AppContext, AppDeps } from '../../context.ts';
import { route } from '../route.ts';

// Remote MCP (api.md, "Remote MCP"): MCP's Streamable HTTP transport at /v1/mcp, stateless, so any
// replica serves any request and no session lives in a process. The tools are those of
// `paddock mcp serve`, calling this API over loopback with the caller's own key: each tool call
// meets the same scopes, allowlist, rate limits and quotas as the same call made directly.

const MCP_VERSION = '1';
const ERRORS: ErrorCode[] = ['not_acceptable', 'unsupported_media_type', 'missing_credential', 'invalid_credential', 'wrong_credential_type', 'insufficient_scope', 'invalid_request', 'invalid_json', 'payload_too_large', 'rate_limited'];

// One JSON-RPC 2.0 message (MCP's Streamable HTTP carries no batches since 2025-06-18), checked
// here so that a malformed one is a problem document naming the field like every other 400 (the
// transport would answer with a JSON-RPC error instead). What a method and its params mean is the
// MCP server's to judge.
const JsonRpcBody = z
  .strictObject({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string().max(200), z.int()]).nullable().optional(),
    method: z.string().min(1).max(200).optional(),
    params: z.record(z.string(), z.unknown()).optional(),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.strictObject({ code: z.int(), message: z.string().max(10_000), data: z.unknown().optional() }).optional(),
  })
  // And as the MCP SDK reads it (a request, a notification, a result or an error), so the
  // transport never refuses what passed here.
  .refine((m) => JSONRPCMessageSchema.safeParse(m).success, { error: 'is not a JSON-RPC request, notification, result or error' })
  .meta({ description: 'A JSON-RPC 2.0 message (MCP)' });

/** Sets a request header as the transport reads it: Node's parsed headers and the raw list. */
function setHeader(ctx: AppContext, name: string, value: string): void {
  ctx.req.headers[name] = value;
  const raw = ctx.req.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) if (raw[i]!.toLowerCase() === name) raw.splice(i, 2);
  raw.push(name, value);
}

/** The address this request reached, as a base URL this process can call. */
function selfClient(ctx: AppContext, apiKey: string): PaddockClient {
  const socket = ctx.req.socket;
  const host = socket.localAddress?.includes(':') ? `[${socket.localAddress}]` : socket.localAddress;
  const actual = `http://${host}:${socket.localPort}`;
  // The SDK sends keys over plain http to loopback names only: name it so, and connect to the
  // address the request came in on (the same server, whatever interface it listens on).
  const nominal = `http://127.0.0.1:${socket.localPort}`;
  return new PaddockClient({
    baseUrl: nominal,
    apiKey,
    retries: 0,
    userAgent: 'paddock-remote-mcp',
    fetch: (input, init) => fetch(String(input instanceof Request ? input.url : input).replace(nominal, actual), init),
  });
}

export const remoteMcp = route(
  {
    method: 'post',
    path: '/v1/mcp',
    operationId: 'mcpMessage',
    summary: "MCP's Streamable HTTP transport (stateless): the tools of `paddock mcp serve`, for clients that take a remote server",
    tag: 'mcp',
    auth: 'apiKey',
    scope: 'sandboxes:read',
    // The message itself (parsing, the server's answer); each tool call it makes is charged again,
    // to its own bucket, as the same call made directly.
    bucket: 'account',
    body: JsonRpcBody,
    // A file written through a tool carries up to a file's bytes, base64 in JSON.
    bodyLimitBytes: (deps: AppDeps) => Math.ceil((deps.config.PADDOCK_FILE_MAX_BYTES * 4) / 3) + 65536,
    responses: {
      200: {
        description: 'The JSON-RPC response (application/json), or a stream of them (text/event-stream)',
        schema: z.unknown(),
        alternatives: [{ contentType: 'text/event-stream', schema: z.string() }],
      },
      202: { description: 'A notification or response was accepted' },
    },
    errors: ERRORS,
  },
  async (ctx, { body }) => {
    // The answer is always JSON (enableJsonResponse): a client that accepts JSON (curl's */*
    // included) is served, though the transport's spec asks for both types.
    if (ctx.accepts('application/json') === false) {
      throw new ApiError('not_acceptable', 'Send Accept: application/json, text/event-stream, as MCP\'s Streamable HTTP transport requires.');
    }
    setHeader(ctx, 'accept', 'application/json, text/event-stream');
    // The body is read and checked already (any JSON media type); the transport wants this one.
    setHeader(ctx, 'content-type', 'application/json');
    const version = ctx.get('mcp-protocol-version');
    if (version && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      throw new ApiError('invalid_request', `MCP-Protocol-Version ${version.slice(0, 40)} is not supported; supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.`);
    }
    const apiKey = ctx.get('authorization').replace(/^Bearer\s+/i, '');
    const server = createPaddockMcpServer({ client: () => selfClient(ctx, apiKey), version: MCP_VERSION });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    ctx.res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    // The transport writes the answer itself.
    ctx.respond = false;
    await transport.handleRequest(ctx.req, ctx.res, body);
  },
);

// GET (a stream for messages the server sends unasked) and DELETE (ending a session) are not
// routes: a stateless server offers neither, and the router answers 405 with Allow: POST.
export const remoteMcpRoutes = [remoteMcp];
