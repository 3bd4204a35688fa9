// The shapes of Paddock's HTTP API v1, as the client sees them, with the SDK's own names and
// comments. The contract itself is api-types.ts, generated from the OpenAPI document: the checks
// at the end of this file fail to compile when a type here and the contract disagree.
import type * as Api from './api-types.ts';

export type Timestamp = string;

/** What an API key may do (docs/api.md, "API key scopes"). */
export type Scope = NonNullable<Api.CreateApiKeyRequest['scopes']>[number];

/** The new account and a dashboard session token (JWT), accepted by the /v1/api-keys routes only. */
export type SignupResult = Api.SignupResponse;
export type AccountSummary = SignupResult['account'];
export type SessionToken = Api.LoginResponse;
/** A key as listed: never the key itself. */
export type ApiKeySummary = Api.ListApiKeysResponse['data'][number];
/** A new key: the raw key (pdk_live_…) is answered this once and never again. */
export type CreatedApiKey = Api.CreateApiKeyResponse;
export type Account = Api.Account;

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
  /** Its workspace is snapshotted when it is destroyed. */
  snapshotOnDestroy: boolean;
  /** That snapshot, once the sandbox is destroyed; null until then, or when the snapshot failed. */
  finalSnapshotId: string | null;
  /** Where its programs may connect. */
  network: NetworkPolicy;
  /** Packets its egress refused, as last recorded (at most once a minute; local runtime). */
  networkRefused: number;
  metadata: Record<string, string>;
}

/**
 * A sandbox's egress: `none`, `all` (outside the hard floor: loopback, private, link-local and
 * metadata ranges, Paddock's own services, other sandboxes), or `{ allow: [...] }`: domains
 * (`*.example.com` for its subdomains), IPv4 addresses or CIDRs, IPv6 ones in brackets, each with
 * an optional `:port`.
 */
export type NetworkPolicy = Api.SetSandboxNetworkRequest;

export interface CreateSandboxInput {
  image?: string;
  metadata?: Record<string, string>;
  env?: Record<string, string>;
  /** Its own end, this many seconds after the create (at most the session cap, the default). */
  timeoutSeconds?: number;
  /** Answer once running or failed (default true), or at once with status pending. */
  wait?: boolean;
  /** Makes a retried create return the first sandbox instead of a second one. */
  idempotencyKey?: string;
  /** A ready snapshot (snap_…): the sandbox's /workspace starts as it was, its image the snapshot's unless `image` names one. */
  snapshot?: string;
  /**
   * Snapshot its workspace when it is destroyed (by `destroy()` or at its expiresAt, its
   * processes ended first): the destroyed sandbox's finalSnapshotId names it. Needs snapshots:write.
   */
  snapshotOnDestroy?: boolean;
  /** Where its programs may connect: the deployment's default when omitted; another needs network:write. */
  network?: NetworkPolicy;
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

/** A background process just started (exec with background: true). */
export interface StartedProcess {
  /** proc_… */
  id: string;
  /** As lists show it: a string command as given, an argv shell-quoted; at most 1024 characters. */
  command: string;
  startedAt: Timestamp;
}

export interface ProcessInfo {
  id: string;
  command: string;
  startedAt: Timestamp;
  status: 'running' | 'exited';
  /** null while it runs, when a signal ended it, or when its end was never recorded. */
  exitCode: number | null;
  signal: string | null;
  endedAt: Timestamp | null;
}

export type ProcessExitEvent = { type: 'exit'; exitCode: number | null; signal: string | null; endedAt: Timestamp | null };
/** A process's output: stdout and stderr events, an exit event last once it has ended (or an error event). */
export type ProcessOutputEvent = ExecOutputEvent | ProcessExitEvent | ExecErrorEvent;

export type ProcessSignal = 'TERM' | 'KILL';

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

export interface ExtractedArchive {
  /** The directory the archive was extracted under. */
  path: string;
  /** Members extracted: files, directories and links. */
  files: number;
  /** Bytes of the archive sent (compressed or not). */
  bytes: number;
}

export interface DownloadArchiveInput {
  /** A directory (its contents, as `./…` members) or a file; default /workspace. */
  path?: string;
  /** tar.gz instead of tar. */
  gzip?: boolean;
}

export interface UploadArchiveInput {
  /** The directory to extract under, created when missing. */
  path: string;
  /** The archive's bytes, as they come (a stream is sent as it is read, never held whole). */
  archive: AsyncIterable<Uint8Array> | Uint8Array;
  /** The archive is gzip-compressed (tar.gz). */
  gzip?: boolean;
}

/** What is at a path: a final symlink is described (with its target), not followed. */
export type FileStat = Api.StatPathResponse;

export interface MovePathInput {
  from: string;
  /** The new name itself (not a directory to move into); its parent directories are made. */
  to: string;
  /** Replace what is at `to` (a file, or an empty directory); default false: 409 file_exists. */
  overwrite?: boolean;
}

/** A file's bytes to write: sent as they are read, never held whole when they are a stream. */
export type RawFileBody = string | Uint8Array | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

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

/** A previewed port of a sandbox, as listed: never a token; `expiresAt` is the last token's made for it. */
export type PreviewSummary = Api.ListPreviewsResponse['data'][number];

export interface CreatePreviewInput {
  /** The port a program in the sandbox listens on (loopback or every address). */
  port: number;
  /** Open to everyone, no token needed; a new preview is private, an existing one keeps its setting unless this is given. */
  public?: boolean;
  /** The new token's lifetime (default an hour, at most a week). */
  expiresInSeconds?: number;
}

/**
 * A preview with a new token: `token` is sent as X-Paddock-Preview-Token by programs, `signedUrl`
 * (the URL with the token) is for a browser, which trades it for a cookie; `expiresAt` is the token's.
 */
export type CreatedPreview = Api.CreatePreviewResponse;

/** A copy of a sandbox's /workspace kept after the sandbox is gone; a new sandbox starts from a ready one. */
export type Snapshot = Api.Snapshot;
/** One page of the account's snapshots, newest first; `next` is the following page's `after` (null: the last). */
export type SnapshotPage = Api.SnapshotList;

export type Allowlist = Api.GetAllowlistResponse;

/**
 * A brokered secret's injection: the sandbox's egress sets `header` (default Authorization) to
 * `format` (default `Bearer {value}`, `{value}` standing for the secret's) on its HTTPS requests
 * to `hosts`; the secret is in no environment.
 */
export type SecretInjection = NonNullable<Api.CreateSecretRequest['inject']>;

export interface CreateSecretInput {
  name: string;
  value: string;
  /** Scope the secret to one sandbox; account-wide when omitted. */
  sandboxId?: string;
  /** Brokered instead of given to execs as an environment variable. */
  inject?: SecretInjection;
}

/** A secret as answered: never its value. */
export type Secret = Api.CreateSecretResponse;

export interface ListResponse<T> {
  data: T[];
}

/** A page of sandboxes: `next` is the `after` of the following page, null on the last. */
export interface SandboxPage extends ListResponse<Sandbox> {
  next: string | null;
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
/** Every code the API's problem documents can carry: generated from the contract (api-types.ts). */
export type KnownErrorCode = Api.ErrorCode;

/** The tool-server (MCP) configuration for one client, from GET /v1/mcp/config. */
/** Where a client keeps its MCP configuration and the entry to merge (GET /v1/mcp/config). */
export type McpConfig = Api.GetMcpConfigResponse;

// ---- events and webhooks ----

export type EventType = Api.ListEventsResponse['data'][number]['type'];

/** {id: "evt_…", type, createdAt, data}: data.sandbox for sandbox.* events (as it was then). */
export interface PaddockEvent {
  id: string;
  type: EventType;
  createdAt: Timestamp;
  data: { sandbox?: Sandbox } & Record<string, unknown>;
}

export type Webhook = Api.ListWebhooksResponse['data'][number];
/** A new endpoint, with its signing secret (Standard Webhooks), shown this once. */
export type CreatedWebhook = Api.CreateWebhookResponse;
export type RotatedWebhookSecret = Api.RotateWebhookSecretResponse;

export interface CreateWebhookInput {
  url: string;
  events?: string[];
  description?: string;
}

export type DeliveryAttempt = Api.ListWebhookDeliveriesResponse['data'][number];

// ---- agreement with the contract (api-types.ts, generated) ----

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;
/**
 * Each line fails to type-check when the named type and the contract's have drifted apart (the
 * SDK's names that are the contract's own types need none).
 */
export type ContractChecks = [
  Holds<Same<Sandbox, Api.Sandbox>>,
  Holds<Same<ExecResult, Api.ExecResult>>,
  Holds<Same<ExecStreamEvent, Api.ExecStreamEvent>>,
  Holds<Same<StartedProcess, Api.ExecCommandResponse extends infer R ? (R extends { id: string } ? R : never) : never>>,
  Holds<Same<ProcessInfo, Api.ListProcessesResponse['data'][number]>>,
  Holds<Same<ProcessOutputEvent, Api.GetProcessOutputResponse>>,
  Holds<Same<FileView, Api.ViewFileResponse>>,
  Holds<Same<WrittenFile, Api.CreateFileResponse>>,
  Holds<Same<{ path: string }, Api.MovePathResponse>>,
  Holds<Same<MovePathInput, Api.MovePathRequest>>,
  Holds<Same<ExtractedArchive, Api.UploadArchiveResponse>>,
  Holds<Same<EditResult, Api.EditFileResponse>>,
  Holds<Same<Listing, Api.ListDirectoryResponse>>,
  Holds<Same<GlobResult, Api.GlobFilesResponse>>,
  Holds<Same<GrepResult, Api.GrepFilesResponse>>,
  Holds<Same<PaddockEvent, Api.ListEventsResponse['data'][number]>>,
  Holds<Same<Secret, Api.ListSecretsResponse['data'][number]>>,
  Holds<Same<CreateSecretInput, Api.CreateSecretRequest>>,
  Holds<Same<Scope[], NonNullable<Api.CreateApiKeyRequest['scopes']>>>,
  Holds<Same<SandboxPage, Api.SandboxList>>,
  Holds<Same<CreatePreviewInput, Api.CreatePreviewRequest>>,
  Holds<Same<NetworkPolicy, Api.Sandbox['network']>>,
  Holds<Same<Omit<CreateSandboxInput, 'wait' | 'idempotencyKey' | 'timeoutSeconds'>, Omit<Api.CreateSandboxRequest, 'timeoutSeconds'>>>,
];
