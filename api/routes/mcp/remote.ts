import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ApiError } from '../../../shared/errors.ts';
import { ToolFailure, createPaddockMcpServer } from '../../../shared/mcp/tools.ts';
import { PaddockClient, PaddockConnectionError, PaddockError } from '../../../shared/sdk/index.ts';
import { inProcessFetch } from '../../in-process-fetch.ts';
import type { AppContext, AppDeps } from '../../context.ts';
import { route } from '../route.ts';
import { REVOKED_DETAIL } from '../../auth/key-sessions.ts';

// Remote MCP (docs/api.md, "Remote MCP"): MCP's Streamable HTTP transport at /v1/mcp, stateless, so any
// replica serves any request and no session lives in a process. The tools are those of
// `paddock mcp serve`, calling this API's own routes in this process with the caller's own key
// (api/in-process-fetch.ts): each tool call meets the same scopes, allowlist, rate limits, in-flight
// caps and quotas as the same call made directly, and none comes back through the public listener.
// The messages themselves are capped per account in flight, as exec is (PADDOCK_INFLIGHT_MCP_PER_ACCOUNT).

const MCP_VERSION = '1';

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

/**
 * The client's nominal address: its requests never leave this process (api/in-process-fetch.ts).
 * It keeps the port the caller reached the API on, as a preview's `*.localhost` URL is served there
 * (api/routes/previews/).
 */
function inProcessBaseUrl(ctx: AppContext): string {
  const port = /:([0-9]{1,5})$/.exec(ctx.host)?.[1];
  return port ? `http://localhost:${port}` : 'http://localhost';
}

/** A client of this API for the caller's key, whose requests this app answers in this process. */
function inProcessClient(ctx: AppContext, apiKey: string): () => PaddockClient {
  const fetch = inProcessFetch(ctx.app, ctx.ip);
  const baseUrl = inProcessBaseUrl(ctx);
  return () => new PaddockClient({ baseUrl, apiKey, retries: 0, userAgent: 'paddock-remote-mcp', fetch: fetch as typeof globalThis.fetch });
}

/**
 * What a tool's failure tells the model, where the default would say too much: a call broken off
 * inside the service (its message names the client's base address) and faults of the server's own,
 * logged with the request id and answered without their message.
 */
function describeFailure(deps: AppDeps, ctx: AppContext) {
  return (err: unknown): { code: string; message: string } | undefined => {
    if (err instanceof PaddockConnectionError) {
      return { code: 'connection_failed', message: 'The call was cut off inside the service before it was answered; retry it.' };
    }
    if (err instanceof PaddockError || err instanceof ToolFailure) return undefined;
    // Given up with its message (the client went): no one reads this, and it is no fault.
    if ((err as { name?: unknown } | undefined)?.name === 'AbortError') return { code: 'cancelled', message: 'The call was given up with its request.' };
    deps.log.error({ err, requestId: ctx.state.requestId }, 'remote MCP tool failed');
    return { code: 'internal_error', message: `An unexpected error occurred; quote the request id ${ctx.state.requestId} when reporting it.` };
  };
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
    // A message holds its place until answered: a tool call as long as its command or its wait.
    inFlight: 'mcp',
    body: JsonRpcBody,
    // A file written through a tool carries up to a file's bytes, base64 in JSON.
    bodyLimitBytes: (config) => Math.ceil((config.PADDOCK_FILE_MAX_BYTES * 4) / 3) + 65536,
    responses: {
      200: {
        description: 'The JSON-RPC response (application/json), or a stream of them (text/event-stream)',
        schema: z.unknown(),
        alternatives: [{ contentType: 'text/event-stream', schema: z.string() }],
      },
      202: { description: 'A notification or response was accepted' },
    },
    errors: ['not_acceptable'],
  },
  async (ctx, { body }, deps) => {
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
    const server = createPaddockMcpServer({ client: inProcessClient(ctx, apiKey), version: MCP_VERSION, describeError: describeFailure(deps, ctx) });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    ctx.res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    // The transport writes the answer itself: from here a revocation of the key cuts it off
    // (middleware/key-session.ts); one that came before answers 401.
    if (ctx.state.session?.revoked) throw new ApiError('invalid_credential', REVOKED_DETAIL);
    ctx.respond = false;
    await transport.handleRequest(ctx.req, ctx.res, body);
  },
);

// GET (a stream for messages the server sends unasked) and DELETE (ending a session) are not
// routes: a stateless server offers neither, and the router answers 405 with Allow: POST.
export const remoteMcpRoutes = [remoteMcp];
