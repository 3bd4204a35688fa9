// The SDK lives in shared/sdk (the @paddock/sdk package): the CLI, its MCP server and the API's remote MCP use it.
export * from '../../shared/sdk/index.ts';
