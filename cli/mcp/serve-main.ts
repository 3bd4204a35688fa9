// The MCP server alone, without the rest of the CLI: `node cli/mcp/serve-main.ts`.
import { printError } from '../output/error.ts';
import { serveMcp } from './serve.ts';

try {
  await serveMcp();
} catch (err) {
  process.exitCode = printError(err, false);
}
