// `paddock mcp serve`: Paddock's MCP server on stdin/stdout, for a client app to start.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { maskKey, resolveConfig } from '../config/resolve.ts';
import { apiClient } from '../services/client.ts';
import { CLI_VERSION } from '../version.ts';
import { createPaddockMcpServer } from '../../shared/mcp/tools.ts';
import { CliError } from '../errors.ts';

function log(message: string): void {
  // stdout carries the protocol: anything for a person goes to stderr (the client's log).
  process.stderr.write(`paddock mcp: ${message}\n`);
}

/**
 * Serves until the client closes standard input. The API key comes from the CLI config (or
 * PADDOCK_API_KEY), read afresh for each tool call, so no client config ever holds it and a key
 * changed with `paddock config` takes effect at once.
 */
export async function serveMcp(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const server = createPaddockMcpServer({
    client: () => apiClient(resolveConfig(env)),
    version: CLI_VERSION,
    describeError: (err) =>
      err instanceof CliError ? { code: err.code ?? 'not_configured', message: err.hint ? `${err.message} ${err.hint}` : err.message } : undefined,
  });
  try {
    const config = resolveConfig(env);
    if (config.baseUrl && config.apiKey) log(`serving on stdio; API ${config.baseUrl}, key ${maskKey(config.apiKey)}`);
    else log(`serving on stdio, but not configured (${config.path}): tools will fail until \`paddock signup\` or \`paddock config\` is run`);
  } catch (err) {
    log(`serving on stdio, but the configuration cannot be read: ${(err as Error).message}`);
  }

  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
  });
  const stop = () => void server.close();
  process.stdin.once('end', stop);
  process.stdin.once('close', stop);
  await server.connect(new StdioServerTransport());
  await closed;
}
