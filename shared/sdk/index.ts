// Paddock's TypeScript client: the one module the CLI, the MCP server and scripts talk HTTP through.
export { PaddockClient, type PaddockClientOptions, type CallOptions } from './client.ts';
export { PaddockError, PaddockApiError, PaddockConnectionError, InsecureBaseUrlError, MalformedCredentialError, LocalArchiveError } from './errors.ts';
export { Sandbox, type SandboxOpts } from './sandbox.ts';
export { Commands, type CommandStartOpts } from './sandbox-commands.ts';
export { Filesystem } from './sandbox-files.ts';
export { Preview, Previews, PREVIEW_TOKEN_HEADER, type PreviewCreateOpts } from './sandbox-previews.ts';
export { Snapshots } from './sandbox-snapshots.ts';
export { CommandHandle, type CommandResult, type OutputHandler } from './process-handle.ts';
export { MissingConfigError, type ConnectionOpts } from './sandbox-config.ts';
export type { Sandbox as SandboxInfo } from './types.ts';
export { checkBaseUrl } from './base-url.ts';
export { describeNetwork } from './network.ts';
export { TERMINAL_SUBPROTOCOL, type Terminal, type TerminalEnd, type TerminalOptions, type WebSocketClass, type WebSocketLike } from './terminal.ts';
export type * from './types.ts';
