import { mcpConfigFor } from '../../services/mcp-config.ts';
import { route } from '../route.ts';
import { McpConfigQuery, McpConfigResponse } from './schema.ts';

export const getMcpConfig = route(
  {
    method: 'get',
    path: '/v1/mcp/config',
    summary: "The MCP server entry for a client (Claude Desktop, Claude Code, Cursor…): where its config file lives and what to merge into it",
    tag: 'mcp',
    auth: 'apiKey',
    query: McpConfigQuery,
    responses: { 200: { description: 'The configuration for the client', schema: McpConfigResponse } },
    errors: ['missing_credential', 'invalid_credential', 'wrong_credential_type', 'invalid_request'],
  },
  async (ctx, { query }) => {
    ctx.body = mcpConfigFor(query.target, query.scope);
  },
);

export const mcpRoutes = [getMcpConfig];
