// The shapes of Paddock's HTTP API v1, as the client sees them. Hand-written from the contract
// (api.md and the route schemas) so that this folder stands alone and could ship as the SDK.

export type Timestamp = string;

export interface AccountSummary {
  id: string;
  email: string;
  createdAt: Timestamp;
}

export interface SignupResult {
  account: AccountSummary;
  /** Dashboard session token (JWT): accepted by the /v1/api-keys routes only. */
  token: string;
  expiresAt: Timestamp;
}

export interface SessionToken {
  token: string;
  expiresAt: Timestamp;
}

export interface ApiKeySummary {
  id: string;
  name: string;
  /** The first characters of the key, to recognise it. */
  start: string;
  createdAt: Timestamp;
  lastUsedAt: Timestamp | null;
}

export interface CreatedApiKey {
  id: string;
  name: string;
  /** The raw key (pdk_live_…), shown this once and never again. */
  key: string;
  start: string;
  createdAt: Timestamp;
}

export interface Account {
  id: string;
  email: string;
  usage: {
    sandboxHours: { used: number; limit: number };
    concurrentSandboxes: { active: number; limit: number };
  };
  period: { start: Timestamp; end: Timestamp };
}

export type SandboxState = 'active' | 'destroyed';
export type SandboxStatus = 'pending' | 'running' | 'terminating' | 'terminated' | 'failed';
export type SandboxListState = 'active' | 'destroyed' | 'all';

export interface Sandbox {
  id: string;
  state: SandboxState;
  status: SandboxStatus;
  image: string;
  createdAt: Timestamp;
  readyAt: Timestamp | null;
  /** createdAt + the session cap: the reaper destroys the sandbox then. */
  expiresAt: Timestamp;
  destroyedAt: Timestamp | null;
  destroyReason: 'user' | 'expired' | 'failed' | null;
  failureMessage: string | null;
  metadata: Record<string, string>;
}

export interface CreateSandboxInput {
  image?: string;
  metadata?: Record<string, string>;
  env?: Record<string, string>;
  /** Answer once running or failed (default true), or at once with status pending. */
  wait?: boolean;
  /** Makes a retried create return the first sandbox instead of a second one. */
  idempotencyKey?: string;
}

export interface ExecInput {
  /** A string is run by /bin/sh -c; an array is argv, run as given. */
  command: string | string[];
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  timeoutSeconds?: number;
}

export interface ExecResult {
  /** null when a signal ended the command. */
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  timedOut: boolean;
}

export type ExecOutputEvent = { type: 'stdout'; data: string } | { type: 'stderr'; data: string };
export type ExecExitEvent = {
  type: 'exit';
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
};
/** The server failed after the stream started: the last line of the stream. */
export type ExecErrorEvent = { type: 'error'; code: string; detail: string };
export type ExecStreamEvent = ExecOutputEvent | ExecExitEvent | ExecErrorEvent;

export interface ViewFileInput {
  path: string;
  startLine?: number;
  endLine?: number;
  encoding?: 'auto' | 'utf-8' | 'base64';
}

export interface FileView {
  path: string;
  /** The lines as text, when encoding is utf-8. */
  content?: string;
  /** The lines as base64, when encoding is base64. */
  contentBase64?: string;
  encoding: 'utf-8' | 'base64';
  startLine: number;
  endLine: number;
  totalLines: number;
  /** Lines follow endLine. */
  truncated: boolean;
  size: number;
}

export interface CreateFileInput {
  path: string;
  /** Exactly one of content (UTF-8 text) and contentBase64 (any bytes). */
  content?: string;
  contentBase64?: string;
  /** false: fail with 409 file_exists when the path exists (default true). */
  overwrite?: boolean;
}

export interface WrittenFile {
  path: string;
  size: number;
  overwritten: boolean;
}

export interface EditFileInput {
  path: string;
  oldText: string;
  newText: string;
  replaceAll?: boolean;
}

export interface EditResult {
  path: string;
  replacements: number;
}

export interface DirEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  modifiedAt: Timestamp;
}

export interface Listing {
  path: string;
  entries: DirEntry[];
  truncated: boolean;
}

export interface GlobInput {
  pattern: string;
  path?: string;
}

export interface GlobResult {
  pattern: string;
  matches: string[];
  truncated: boolean;
}

export interface GrepInput {
  pattern: string;
  path?: string;
  glob?: string;
  ignoreCase?: boolean;
}

export interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

export interface GrepResult {
  pattern: string;
  matches: GrepMatch[];
  truncated: boolean;
}

export interface Allowlist {
  /** Programs every exec may run; empty means every command is allowed. */
  commands: string[];
  updatedAt: Timestamp | null;
}

export interface CreateSecretInput {
  name: string;
  value: string;
  /** Scope the secret to one sandbox; account-wide when omitted. */
  sandboxId?: string;
}

export interface Secret {
  name: string;
  sandboxId: string | null;
  createdAt: Timestamp;
}

export interface ListResponse<T> {
  data: T[];
}

/** RFC 9457 problem document, as every Paddock error answers. */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  requestId: string;
  [extra: string]: unknown;
}

/** The codes the API answers with (a closed list); clients branch on these, never on `detail`. */
export type KnownErrorCode =
  | 'invalid_json'
  | 'invalid_request'
  | 'missing_credential'
  | 'invalid_credential'
  | 'wrong_credential_type'
  | 'invalid_login'
  | 'command_not_allowed'
  | 'not_found'
  | 'api_key_not_found'
  | 'sandbox_not_found'
  | 'secret_not_found'
  | 'file_not_found'
  | 'method_not_allowed'
  | 'not_acceptable'
  | 'email_taken'
  | 'idempotency_conflict'
  | 'sandbox_not_running'
  | 'file_exists'
  | 'is_a_directory'
  | 'not_a_directory'
  | 'payload_too_large'
  | 'file_too_large'
  | 'unsupported_media_type'
  | 'idempotency_key_reused'
  | 'image_not_allowed'
  | 'edit_no_match'
  | 'edit_ambiguous'
  | 'rate_limited'
  | 'concurrent_sandbox_limit_reached'
  | 'monthly_usage_limit_reached'
  | 'internal_error'
  | 'service_unavailable';

/** The tool-server (MCP) configuration for one client, from GET /v1/mcp/config. */
export interface McpConfig {
  target: string;
  scope: string;
  /** Where the client keeps its configuration, per operating system. */
  path: Record<string, string>;
  format: string;
  /** The configuration entry to add. */
  snippet: string;
}
