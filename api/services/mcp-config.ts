import { ApiError } from '../../shared/errors.ts';
import {
  configSnippet,
  displayConfigPaths,
  findMcpTarget,
  scopesOf,
  type McpFormat,
  type McpOs,
  type McpScope,
} from '../../shared/mcp/targets.ts';

export interface McpConfig {
  target: string;
  scope: McpScope;
  path: Record<McpOs, string>;
  format: McpFormat;
  snippet: string;
}

/**
 * The configuration of Paddock's MCP server for one client. The entry runs `paddock mcp serve`,
 * which authenticates from the CLI config, so it holds no credential and is the same for everyone.
 */
export function mcpConfigFor(targetName: string, scope: McpScope): McpConfig {
  const target = findMcpTarget(targetName);
  if (!target) throw new ApiError('invalid_request', `query.target: unknown MCP client "${targetName}"`);
  if (!target.scopes[scope]) {
    throw new ApiError('invalid_request', `query.scope: ${target.name} has no ${scope} scope; it has ${scopesOf(target).join(', ')}`);
  }
  return {
    target: target.name,
    scope,
    path: displayConfigPaths(target, scope),
    format: target.format,
    snippet: configSnippet(target),
  };
}
