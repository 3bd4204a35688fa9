import { ApiError } from '../../shared/errors.ts';
import {
  configSnippet,
  displayConfigPaths,
  findMcpTarget,
  scopesOf,
  type McpScope,
  type McpTargetName,
  type McpTransport,
} from '../../shared/mcp/targets.ts';
import type { z } from 'zod';
import type { McpConfigResponse } from '../routes/mcp/schema.ts';

export type McpConfig = z.output<typeof McpConfigResponse>;

/**
 * The configuration of Paddock's MCP server for one client. The entry runs `paddock mcp serve`,
 * which authenticates from the CLI config, so it holds no credential and is the same for everyone.
 */
export function mcpConfigFor(targetName: McpTargetName, scope: McpScope, transport: McpTransport = 'stdio', remoteUrl = ''): McpConfig {
  const target = findMcpTarget(targetName);
  if (!target) throw new ApiError('invalid_request', `query.target: unknown MCP client "${targetName}"`);
  if (!target.scopes[scope]) {
    throw new ApiError('invalid_request', `query.scope: ${target.name} has no ${scope} scope; it has ${scopesOf(target).join(', ')}`);
  }
  if (transport === 'http' && !target.remote) {
    throw new ApiError('invalid_request', `query.transport: ${target.label} takes no remote MCP server in its config file; use transport=stdio`);
  }
  return {
    target: targetName,
    scope,
    path: displayConfigPaths(target, scope),
    format: target.format,
    transport,
    snippet: configSnippet(target, undefined, transport === 'http' ? remoteUrl : undefined),
  };
}
