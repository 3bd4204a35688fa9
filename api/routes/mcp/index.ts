import { mcpConfigFor } from '../../services/mcp-config.ts';
import { route } from '../route.ts';
import { McpConfigQuery, McpConfigResponse } from './schema.ts';
import { remoteMcpRoutes } from './remote.ts';

export const getMcpConfig = route(
  {
    method: 'get',
    path: '/v1/mcp/config',
    operationId: 'getMcpConfig',
    summary: "The MCP server entry for a client (Claude Desktop, Claude Code, Cursor…): where its config file lives and what to merge into it",
    tag: 'mcp',
    auth: 'apiKey',
    bucket: 'account',
    scope: 'sandboxes:read',
    query: McpConfigQuery,
    responses: { 200: { description: 'The configuration for the client', schema: McpConfigResponse } },
    errors: [],
  },
  async (ctx, { query }) => {
    // The remote server's address as this request reached it (through the ingress, with PADDOCK_TRUST_PROXY).
    ctx.body = mcpConfigFor(query.target, query.scope, query.transport, `${ctx.protocol}://${ctx.host}/v1/mcp`);
  },
);

export const mcpRoutes = [getMcpConfig, ...remoteMcpRoutes];
