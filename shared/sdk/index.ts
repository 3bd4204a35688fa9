// Paddock's TypeScript client: the one module the CLI, the MCP server and scripts talk HTTP through.
export { PaddockClient, type PaddockClientOptions, type CallOptions } from './client.ts';
export { PaddockError, PaddockApiError, PaddockConnectionError, InsecureBaseUrlError, MalformedCredentialError } from './errors.ts';
export { checkBaseUrl } from './base-url.ts';
export { TERMINAL_SUBPROTOCOL, type Terminal, type TerminalEnd, type TerminalOptions, type WebSocketClass, type WebSocketLike } from './terminal.ts';
export type * from './types.ts';
