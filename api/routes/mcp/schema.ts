import { z } from 'zod';
import { MCP_SCOPES, MCP_TARGET_NAMES, MCP_TRANSPORTS } from '../../../shared/mcp/targets.ts';

export const McpConfigQuery = z.strictObject({
  target: z
    .enum(MCP_TARGET_NAMES, { error: `must be one of: ${MCP_TARGET_NAMES.join(', ')}` })
    .meta({ description: 'The MCP client to configure' }),
  scope: z
    .enum(MCP_SCOPES, { error: `must be one of: ${MCP_SCOPES.join(', ')}` })
    .default('user')
    .meta({ description: "user (default): the client's per-user file; project: its file in a project folder, where it has one" }),
  transport: z
    .enum(MCP_TRANSPORTS, { error: `must be one of: ${MCP_TRANSPORTS.join(', ')}` })
    .default('stdio')
    .meta({ description: 'stdio (default): the client runs `paddock mcp serve`; http: the client connects to this API\'s /v1/mcp, the key taken from its PADDOCK_API_KEY' }),
});

export const McpConfigResponse = z.object({
  target: z.enum(MCP_TARGET_NAMES),
  scope: z.enum(MCP_SCOPES),
  path: z
    .object({ macos: z.string(), linux: z.string(), windows: z.string() })
    .meta({ description: 'Where the client keeps the file, per OS (`~` is the home folder; a project-scope path is relative to the project)' }),
  format: z.enum(['json', 'jsonc', 'toml']).meta({ description: 'jsonc: JSON with comments' }),
  transport: z.enum(MCP_TRANSPORTS),
  snippet: z
    .string()
    .meta({ description: 'The text to merge into that file: the paddock server entry, which runs `paddock mcp serve` and holds no key' }),
});
