// Generated from the OpenAPI document by scripts/gen-client-types.ts (`npm run gen:types`): do not
// edit. The names are the document's component schemas; types.ts gives them the SDK's own names.

/** Every code an error's problem document can carry (shared/errors.ts). */
export type ErrorCode =
  | "invalid_json"
  | "invalid_request"
  | "missing_credential"
  | "invalid_credential"
  | "wrong_credential_type"
  | "preview_unauthorized"
  | "invalid_login"
  | "command_not_allowed"
  | "permission_denied"
  | "not_found"
  | "api_key_not_found"
  | "sandbox_not_found"
  | "secret_not_found"
  | "file_not_found"
  | "event_not_found"
  | "webhook_not_found"
  | "process_not_found"
  | "preview_not_found"
  | "snapshot_not_found"
  | "method_not_allowed"
  | "not_acceptable"
  | "upgrade_required"
  | "email_taken"
  | "idempotency_conflict"
  | "sandbox_not_running"
  | "process_not_running"
  | "snapshot_not_ready"
  | "snapshot_corrupt"
  | "file_exists"
  | "is_a_directory"
  | "not_a_directory"
  | "not_a_regular_file"
  | "file_io_error"
  | "directory_not_empty"
  | "payload_too_large"
  | "file_too_large"
  | "range_not_satisfiable"
  | "headers_too_large"
  | "unsupported_media_type"
  | "idempotency_key_reused"
  | "image_not_allowed"
  | "image_not_supported"
  | "secret_limit_reached"
  | "webhook_url_not_allowed"
  | "webhook_limit_reached"
  | "edit_no_match"
  | "edit_ambiguous"
  | "invalid_archive"
  | "timeout_past_cap"
  | "rate_limited"
  | "concurrent_sandbox_limit_reached"
  | "monthly_usage_limit_reached"
  | "process_limit_reached"
  | "insufficient_scope"
  | "egress_not_permitted"
  | "too_many_in_flight"
  | "preview_limit_reached"
  | "snapshot_storage_limit_reached"
  | "internal_error"
  | "service_unavailable"
  | "server_busy"
  | "preview_busy"
  | "port_not_listening"
  | "operation_timed_out"
  | "insufficient_storage";

export type Account = {
  id: string;
  email: string;
  usage: {
    sandboxHours: {
      /** Sandbox-hours used this calendar month (UTC) */
      used: number;
      limit: number;
    };
    concurrentSandboxes: {
      active: number;
      limit: number;
    };
    snapshotStorage: {
      /** Bytes the account's ready snapshots hold, as stored */
      usedBytes: number;
      limitBytes: number;
    };
  };
  period: {
    /** RFC 3339 UTC timestamp */
    start: string;
    /** RFC 3339 UTC timestamp */
    end: string;
  };
};

export type CreateApiKeyRequest = {
  /** A label to tell keys apart; defaults to "default" */
  name?: string;
  /** What the key may do; every scope when omitted. One or more of: sandboxes:read, sandboxes:write, exec, files:read, files:write, secrets:write, allowlist:write, webhooks:write, previews:write, snapshots:write, network:write */
  scopes?: ("sandboxes:read" | "sandboxes:write" | "exec" | "files:read" | "files:write" | "secrets:write" | "allowlist:write" | "webhooks:write" | "previews:write" | "snapshots:write" | "network:write")[];
};

export type CreateApiKeyResponse = {
  id: string;
  name: string;
  /** The raw key (pdk_live_…); shown this once and never again */
  key: string;
  /** What the key may do */
  scopes: ("sandboxes:read" | "sandboxes:write" | "exec" | "files:read" | "files:write" | "secrets:write" | "allowlist:write" | "webhooks:write" | "previews:write" | "snapshots:write" | "network:write")[];
  start: string;
  /** RFC 3339 UTC timestamp */
  createdAt: string;
};

export type CreateFileRequest = {
  /** The content as text, written as UTF-8 */
  content?: string;
  /** The content as base64 (any bytes) */
  contentBase64?: string;
};

export type CreateFileResponse = {
  path: string;
  size: number;
  /** An existing file was replaced */
  overwritten: boolean;
};

export type CreatePreviewRequest = {
  /** A TCP port a program in the sandbox listens on (on loopback or on every address) */
  port: number;
  /** Open to everyone, no token needed. A new preview is private; an existing one keeps its setting unless this is given */
  public?: boolean;
  /** The new token's lifetime */
  expiresInSeconds?: number;
};

export type CreatePreviewResponse = {
  port: number;
  url: string;
  public: boolean;
  /** When this token expires */
  expiresAt: string;
  /** Sent as X-Paddock-Preview-Token by programs; opens this port of this sandbox only */
  token: string;
  /** The URL with the token, for a browser: it is traded for a host-only HttpOnly cookie */
  signedUrl: string;
};

export type CreateSandboxRequest = {
  /** Container image; the operator's default when omitted. Ignored by the local runtime. */
  image?: string;
  metadata?: Record<string, string>;
  /** Environment variables every exec in the sandbox starts with. While a command allowlist is in force, variables that decide which code runs (PATH, LD_*, BASH_ENV…) are refused here, as in exec. */
  env?: Record<string, string>;
  /** Its own end, this many seconds after its create (expiresAt); at most the session cap, which is the default */
  timeoutSeconds?: number;
  /** A ready snapshot of the account's (snap_…): the sandbox's /workspace starts as it was, and its image is the snapshot's unless `image` names one */
  snapshot?: string;
  /** Where its programs may connect: the operator's default (PADDOCK_DEFAULT_EGRESS) when omitted; another needs the scope network:write */
  network?: {
    egress: ("none" | "all") | {
      /** Where its programs may connect (and, for domains, which names its DNS answers); nothing else */
      allow: string[];
    };
  };
  /** Snapshot its workspace when it is destroyed, by a DELETE or at its expiresAt (its processes are ended first); the destroyed sandbox's finalSnapshotId names the snapshot. Needs the scope snapshots:write */
  snapshotOnDestroy?: boolean;
};

export type CreateSecretRequest = {
  name: string;
  /** Stored encrypted; never returned by any route */
  value: string;
  /** Scope the secret to one sandbox; account-wide when omitted */
  sandboxId?: string;
  /** Brokered instead of exposed: the secret is in no environment; the sandbox's egress sets the header on its HTTPS requests to these hosts, so a program uses the credential without being able to read it */
  inject?: {
    /** The hosts whose HTTPS requests from the sandbox get the header (only where the sandbox's egress policy reaches them) */
    hosts: string[];
    /** The header set (replacing one of the same name the program sent); default Authorization */
    header?: string;
    /** The header's value, {value} standing for the secret's; default "Bearer {value}" */
    format?: string;
  };
};

export type CreateSecretResponse = {
  name: string;
  sandboxId: string | null;
  /** RFC 3339 UTC timestamp */
  createdAt: string;
  /** How the secret is brokered; null for one given to execs as an environment variable */
  inject: {
    /** The hosts whose HTTPS requests from the sandbox get the header (only where the sandbox's egress policy reaches them) */
    hosts: string[];
    /** The header set (replacing one of the same name the program sent); default Authorization */
    header: string;
    /** The header's value, {value} standing for the secret's; default "Bearer {value}" */
    format: string;
  } | null;
};

export type CreateSnapshotRequest = {
  /** A name of your own for it */
  name?: string;
};

export type CreateTerminalTicketResponse = {
  /** Single use, for this sandbox only; never logged */
  ticket: string;
  /** RFC 3339 UTC timestamp */
  expiresAt: string;
};

export type CreateWebhookRequest = {
  /** Where events are POSTed: https (http only for localhost and 127.0.0.1 when the operator sets PADDOCK_WEBHOOK_ALLOW_LOCAL, for development). A delivery never connects to a loopback, private, link-local or metadata address, checked on the address it connects to. */
  url: string;
  /** Event types to send; every type ("*") when omitted */
  events?: ("sandbox.created" | "sandbox.running" | "sandbox.failed" | "sandbox.expiring" | "sandbox.destroyed" | "preview.created" | "preview.revoked" | "snapshot.created" | "snapshot.failed" | "snapshot.deleted" | "network.refused" | "usage.threshold" | "webhook.disabled" | "*")[];
  description?: string;
};

export type CreateWebhookResponse = {
  /** wh_… */
  id: string;
  url: string;
  /** ["*"]: every type */
  events: string[];
  description: string | null;
  /** RFC 3339 UTC timestamp */
  createdAt: string;
  /** Set when it failed for the whole retry window; a test event it answers re-enables it */
  disabledAt: string | null;
  disabledReason: string | null;
  /** whsec_…: the Standard Webhooks signing secret, shown this once */
  secret: string;
};

export type DownloadArchiveResponse = string;

export type EditFileRequest = {
  /** The exact text to replace */
  oldText: string;
  newText: string;
  /** Replace every occurrence (else it must occur exactly once) */
  replaceAll?: boolean;
};

export type EditFileResponse = {
  path: string;
  replacements: number;
};

export type ExecCommandResponse = {
  /** proc_… */
  id: string;
  /** The command as lists show it: a string as given, an argv shell-quoted; at most 1024 characters */
  command: string;
  /** RFC 3339 UTC timestamp */
  startedAt: string;
};

export type ExecRequest = {
  command: string | string[];
  /** Working directory; default /workspace */
  cwd?: string;
  env?: Record<string, string>;
  /** Sent to the command as standard input (UTF-8), then closed */
  stdin?: string;
  /** Default 60; the operator sets the maximum */
  timeoutSeconds?: number;
  /** Start it as a background process and answer 202 at once (not with stdin or timeoutSeconds); see /processes */
  background?: boolean;
};

export type ExecResult = {
  /** null when a signal ended the command */
  exitCode: number | null;
  /** SIGKILL, SIGTERM… when a signal ended it */
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  timedOut: boolean;
};

export type ExecStreamEvent = {
  type: "stdout" | "stderr";
  data: string;
} | {
  type: "exit";
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
} | {
  type: "error";
  code: string;
  detail: string;
};

export type GetAllowlistResponse = {
  /** Programs every exec may run; empty means every command is allowed */
  commands: string[];
  updatedAt: string | null;
};

export type GetMcpConfigResponse = {
  target: "claude-desktop" | "claude-code" | "cursor" | "windsurf" | "vscode" | "codex" | "gemini" | "zed";
  scope: "user" | "project";
  /** Where the client keeps the file, per OS (`~` is the home folder; a project-scope path is relative to the project) */
  path: {
    macos: string;
    linux: string;
    windows: string;
  };
  /** jsonc: JSON with comments */
  format: "json" | "jsonc" | "toml";
  transport: "stdio" | "http";
  /** The text to merge into that file: the paddock server entry, which runs `paddock mcp serve` and holds no key */
  snippet: string;
};

export type GetProcessOutputResponse = {
  type: "stdout" | "stderr";
  data: string;
} | {
  type: "exit";
  exitCode: number | null;
  signal: string | null;
  endedAt: string | null;
} | {
  type: "error";
  code: string;
  detail: string;
};

export type GlobFilesResponse = {
  pattern: string;
  /** Absolute paths, sorted */
  matches: string[];
  truncated: boolean;
};

export type GrepFilesResponse = {
  pattern: string;
  matches: {
    path: string;
    line: number;
    text: string;
  }[];
  truncated: boolean;
};

export type ListApiKeysResponse = {
  data: {
    id: string;
    name: string;
    /** What the key may do */
    scopes: ("sandboxes:read" | "sandboxes:write" | "exec" | "files:read" | "files:write" | "secrets:write" | "allowlist:write" | "webhooks:write" | "previews:write" | "snapshots:write" | "network:write")[];
    /** The first characters of the key, to recognise it */
    start: string;
    /** RFC 3339 UTC timestamp */
    createdAt: string;
    lastUsedAt: string | null;
  }[];
};

export type ListDirectoryResponse = {
  path: string;
  entries: {
    name: string;
    type: "file" | "dir" | "symlink" | "other";
    /** Bytes (of a symlink: its target name) */
    size: number;
    /** RFC 3339 UTC timestamp */
    modifiedAt: string;
  }[];
  truncated: boolean;
};

export type ListEventsResponse = {
  data: {
    /** evt_… */
    id: string;
    type: "sandbox.created" | "sandbox.running" | "sandbox.failed" | "sandbox.expiring" | "sandbox.destroyed" | "preview.created" | "preview.revoked" | "snapshot.created" | "snapshot.failed" | "snapshot.deleted" | "network.refused" | "usage.threshold" | "webhook.disabled" | "webhook.test";
    /** RFC 3339 UTC timestamp */
    createdAt: string;
    /** sandbox.*: {sandbox} as it was right after the transition (sandbox.destroyed carries its destroyReason); usage.threshold: {threshold: 80|100, usage: {sandboxHours: {used, limit}}, period: {start, end}}; webhook.disabled: {webhook: {id, url, disabledAt, lastEventId}}; webhook.test: {webhook: {id}} */
    data: Record<string, unknown>;
  }[];
};

export type ListEventsStream = string;

export type ListPreviewsResponse = {
  data: {
    port: number;
    url: string;
    public: boolean;
    /** When the last token made for the port expires */
    expiresAt: string;
  }[];
};

export type ListProcessesResponse = {
  data: {
    id: string;
    command: string;
    /** RFC 3339 UTC timestamp */
    startedAt: string;
    status: "running" | "exited";
    /** null while it runs, when a signal ended it, or when its end was never recorded */
    exitCode: number | null;
    /** SIGTERM, SIGKILL… when a signal ended it */
    signal: string | null;
    endedAt: string | null;
  }[];
};

export type ListSecretsResponse = {
  data: {
    name: string;
    sandboxId: string | null;
    /** RFC 3339 UTC timestamp */
    createdAt: string;
    /** How the secret is brokered; null for one given to execs as an environment variable */
    inject: {
      /** The hosts whose HTTPS requests from the sandbox get the header (only where the sandbox's egress policy reaches them) */
      hosts: string[];
      /** The header set (replacing one of the same name the program sent); default Authorization */
      header: string;
      /** The header's value, {value} standing for the secret's; default "Bearer {value}" */
      format: string;
    } | null;
  }[];
};

export type ListWebhookDeliveriesResponse = {
  data: {
    eventId: string;
    eventType: string;
    attempt: number;
    statusCode: number | null;
    /** Why the attempt failed, in Paddock's words (never the receiver's beyond its status); null for a 2xx. A host that resolves to an address webhooks may not reach, or to none, reads "<host> does not resolve to an address webhooks may be sent to: not connected to", never naming the address */
    error: string | null;
    durationMs: number;
    /** RFC 3339 UTC timestamp */
    createdAt: string;
    nextRetryAt: string | null;
  }[];
};

export type ListWebhooksResponse = {
  data: {
    /** wh_… */
    id: string;
    url: string;
    /** ["*"]: every type */
    events: string[];
    description: string | null;
    /** RFC 3339 UTC timestamp */
    createdAt: string;
    /** Set when it failed for the whole retry window; a test event it answers re-enables it */
    disabledAt: string | null;
    disabledReason: string | null;
  }[];
};

export type LoginRequest = {
  email: string;
  password: string;
};

export type LoginResponse = {
  /** Dashboard session token (JWT); accepted by /v1/api-keys routes only */
  token: string;
  /** RFC 3339 UTC timestamp */
  expiresAt: string;
};

export type McpMessageRequest = {
  jsonrpc: "2.0";
  id?: (string | number) | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: {
    code: number;
    message: string;
    data?: unknown;
  };
};

export type McpMessageResponse = unknown;

export type McpMessageStream = string;

export type MovePathRequest = {
  /** What to move (a symlink is moved itself). A path in the sandbox; relative paths are relative to /workspace. `..` and symlinks resolve inside the sandbox. */
  from: string;
  /** Its new name (not a directory to move it into); its parent directories are made. A path in the sandbox; relative paths are relative to /workspace. `..` and symlinks resolve inside the sandbox. */
  to: string;
  /** true: replace what is at `to` (a file, or an empty directory); else 409 file_exists */
  overwrite?: boolean;
};

export type MovePathResponse = {
  path: string;
};

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: "invalid_json" | "invalid_request" | "missing_credential" | "invalid_credential" | "wrong_credential_type" | "preview_unauthorized" | "invalid_login" | "command_not_allowed" | "permission_denied" | "not_found" | "api_key_not_found" | "sandbox_not_found" | "secret_not_found" | "file_not_found" | "event_not_found" | "webhook_not_found" | "process_not_found" | "preview_not_found" | "snapshot_not_found" | "method_not_allowed" | "not_acceptable" | "upgrade_required" | "email_taken" | "idempotency_conflict" | "sandbox_not_running" | "process_not_running" | "snapshot_not_ready" | "snapshot_corrupt" | "file_exists" | "is_a_directory" | "not_a_directory" | "not_a_regular_file" | "file_io_error" | "directory_not_empty" | "payload_too_large" | "file_too_large" | "range_not_satisfiable" | "headers_too_large" | "unsupported_media_type" | "idempotency_key_reused" | "image_not_allowed" | "image_not_supported" | "secret_limit_reached" | "webhook_url_not_allowed" | "webhook_limit_reached" | "edit_no_match" | "edit_ambiguous" | "invalid_archive" | "timeout_past_cap" | "rate_limited" | "concurrent_sandbox_limit_reached" | "monthly_usage_limit_reached" | "process_limit_reached" | "insufficient_scope" | "egress_not_permitted" | "too_many_in_flight" | "preview_limit_reached" | "snapshot_storage_limit_reached" | "internal_error" | "service_unavailable" | "server_busy" | "preview_busy" | "port_not_listening" | "operation_timed_out" | "insufficient_storage";
  requestId: string;
};

export type ReadRawResponse = string;

export type RotateWebhookSecretResponse = {
  id: string;
  /** The new whsec_… secret, shown this once */
  secret: string;
  /** Until then deliveries are signed with both secrets (two v1 signatures) */
  previousSecretExpiresAt: string;
};

export type Sandbox = {
  id: string;
  state: "active" | "destroyed";
  status: "pending" | "running" | "terminating" | "terminated" | "failed";
  image: string;
  /** RFC 3339 UTC timestamp */
  createdAt: string;
  readyAt: string | null;
  /** createdAt + the session cap, or its own timeout; the reaper destroys the sandbox then */
  expiresAt: string;
  destroyedAt: string | null;
  /** user: destroyed on request; expired: its expiresAt (the session cap or its own timeout); failed: never became ready */
  destroyReason: ("user" | "expired" | "failed") | null;
  /** Why a failed sandbox failed */
  failureMessage: string | null;
  /** Its workspace is snapshotted when it is destroyed */
  snapshotOnDestroy: boolean;
  /** The snapshot of its workspace taken as it was destroyed (snapshotOnDestroy), named as its copy begins (while the sandbox is terminating, that snapshot is pending); null until then, or when that snapshot failed (its snapshot.failed event says why) */
  finalSnapshotId: string | null;
  /** Where the sandbox's programs may connect: none, all (outside the hard floor: loopback, private, link-local and metadata ranges, Paddock's own services and other sandboxes), or the listed domains, addresses and ranges */
  network: {
    egress: ("none" | "all") | {
      /** Where its programs may connect (and, for domains, which names its DNS answers); nothing else */
      allow: string[];
    };
  };
  /** Packets its egress filter refused (a refused connection is one), as the workers last recorded it with a network.refused event: at most once a minute; local runtime (on Kubernetes the network plugin refuses, uncounted) */
  networkRefused: number;
  metadata: Record<string, string>;
};

export type SandboxList = {
  data: {
    id: string;
    state: "active" | "destroyed";
    status: "pending" | "running" | "terminating" | "terminated" | "failed";
    image: string;
    /** RFC 3339 UTC timestamp */
    createdAt: string;
    readyAt: string | null;
    /** createdAt + the session cap, or its own timeout; the reaper destroys the sandbox then */
    expiresAt: string;
    destroyedAt: string | null;
    /** user: destroyed on request; expired: its expiresAt (the session cap or its own timeout); failed: never became ready */
    destroyReason: ("user" | "expired" | "failed") | null;
    /** Why a failed sandbox failed */
    failureMessage: string | null;
    /** Its workspace is snapshotted when it is destroyed */
    snapshotOnDestroy: boolean;
    /** The snapshot of its workspace taken as it was destroyed (snapshotOnDestroy), named as its copy begins (while the sandbox is terminating, that snapshot is pending); null until then, or when that snapshot failed (its snapshot.failed event says why) */
    finalSnapshotId: string | null;
    /** Where the sandbox's programs may connect: none, all (outside the hard floor: loopback, private, link-local and metadata ranges, Paddock's own services and other sandboxes), or the listed domains, addresses and ranges */
    network: {
      egress: ("none" | "all") | {
        /** Where its programs may connect (and, for domains, which names its DNS answers); nothing else */
        allow: string[];
      };
    };
    /** Packets its egress filter refused (a refused connection is one), as the workers last recorded it with a network.refused event: at most once a minute; local runtime (on Kubernetes the network plugin refuses, uncounted) */
    networkRefused: number;
    metadata: Record<string, string>;
  }[];
  /** Pass as ?after= for the next page; null on the last page */
  next: string | null;
};

export type SetAllowlistRequest = {
  /** Program names (compared by basename); duplicates are removed and the list is sorted. */
  commands: string[];
};

export type SetSandboxNetworkRequest = {
  egress: ("none" | "all") | {
    /** Where its programs may connect (and, for domains, which names its DNS answers); nothing else */
    allow: string[];
  };
};

export type SetSandboxTimeoutRequest = {
  /** The sandbox ends this many seconds from now: earlier or later than before, never past createdAt + the session cap */
  timeoutSeconds: number;
};

export type SignupRequest = {
  email: string;
  password: string;
};

export type SignupResponse = {
  account: {
    id: string;
    email: string;
    /** RFC 3339 UTC timestamp */
    createdAt: string;
  };
  token: string;
  /** RFC 3339 UTC timestamp */
  expiresAt: string;
};

export type Snapshot = {
  id: string;
  name: string | null;
  /** The sandbox it was taken from */
  sandboxId: string;
  /** The image of that sandbox: a sandbox started from the snapshot gets it unless its create names another */
  image: string;
  status: "pending" | "ready" | "failed";
  /** A failed snapshot's reason: the error code a request would have been answered with */
  failureCode: string | null;
  /** As stored, compressed: what counts against PADDOCK_QUOTA_SNAPSHOT_BYTES */
  sizeBytes: number;
  /** Files, directories and links in it */
  files: number;
  /** RFC 3339 UTC timestamp */
  createdAt: string;
  /** It is deleted then (PADDOCK_SNAPSHOT_RETENTION_DAYS after it was taken) */
  expiresAt: string;
};

export type SnapshotList = {
  data: {
    id: string;
    name: string | null;
    /** The sandbox it was taken from */
    sandboxId: string;
    /** The image of that sandbox: a sandbox started from the snapshot gets it unless its create names another */
    image: string;
    status: "pending" | "ready" | "failed";
    /** A failed snapshot's reason: the error code a request would have been answered with */
    failureCode: string | null;
    /** As stored, compressed: what counts against PADDOCK_QUOTA_SNAPSHOT_BYTES */
    sizeBytes: number;
    /** Files, directories and links in it */
    files: number;
    /** RFC 3339 UTC timestamp */
    createdAt: string;
    /** It is deleted then (PADDOCK_SNAPSHOT_RETENTION_DAYS after it was taken) */
    expiresAt: string;
  }[];
  /** Pass as ?after= for the next page; null on the last page */
  next: string | null;
};

export type StatPathResponse = {
  path: string;
  /** What the path itself is: a final symlink is not followed */
  type: "file" | "dir" | "symlink" | "other";
  /** Bytes (of a symlink: its target name) */
  size: number;
  /** The permission bits, four octal digits (`0644`) */
  mode: string;
  /** RFC 3339 UTC timestamp */
  modifiedAt: string;
  /** A symlink's target, as written in it */
  target?: string;
};

export type TestWebhookResponse = {
  /** evt_… */
  id: string;
  type: "sandbox.created" | "sandbox.running" | "sandbox.failed" | "sandbox.expiring" | "sandbox.destroyed" | "preview.created" | "preview.revoked" | "snapshot.created" | "snapshot.failed" | "snapshot.deleted" | "network.refused" | "usage.threshold" | "webhook.disabled" | "webhook.test";
  /** RFC 3339 UTC timestamp */
  createdAt: string;
  /** sandbox.*: {sandbox} as it was right after the transition (sandbox.destroyed carries its destroyReason); usage.threshold: {threshold: 80|100, usage: {sandboxHours: {used, limit}}, period: {start, end}}; webhook.disabled: {webhook: {id, url, disabledAt, lastEventId}}; webhook.test: {webhook: {id}} */
  data: Record<string, unknown>;
};

export type UploadArchiveResponse = {
  /** The directory the archive was extracted under */
  path: string;
  /** Members extracted: files, directories and links */
  files: number;
  /** Bytes of the archive received, as sent (compressed or not) */
  bytes: number;
};

export type ViewFileResponse = {
  path: string;
  /** The lines as text, when encoding is utf-8 */
  content?: string;
  /** The lines as base64, when encoding is base64 */
  contentBase64?: string;
  encoding: "utf-8" | "base64";
  startLine: number;
  /** The last line answered (0 for an empty file) */
  endLine: number;
  totalLines: number;
  /** Lines follow endLine */
  truncated: boolean;
  /** The whole file's size in bytes */
  size: number;
};

export type WriteProcessStdinRequest = {
  /** Written to the process's standard input (UTF-8), which stays open for the next write */
  data: string;
};

/** Every operation of the API, by operationId. */
export interface Operations {
  clearAllowlist: 'DELETE /v1/allowlist';
  createApiKey: 'POST /v1/api-keys';
  createFile: 'PUT /v1/sandboxes/{id}/files';
  createPreview: 'POST /v1/sandboxes/{id}/previews';
  createSandbox: 'POST /v1/sandboxes';
  createSecret: 'POST /v1/secrets';
  createSnapshot: 'POST /v1/sandboxes/{id}/snapshots';
  createTerminalTicket: 'POST /v1/sandboxes/{id}/terminal/tickets';
  createWebhook: 'POST /v1/webhooks';
  deletePreview: 'DELETE /v1/sandboxes/{id}/previews/{port}';
  deleteSecret: 'DELETE /v1/secrets/{name}';
  deleteSnapshot: 'DELETE /v1/snapshots/{snapshotId}';
  deleteWebhook: 'DELETE /v1/webhooks/{webhookId}';
  destroySandbox: 'DELETE /v1/sandboxes/{id}';
  downloadArchive: 'GET /v1/sandboxes/{id}/files/archive';
  editFile: 'PATCH /v1/sandboxes/{id}/files';
  execCommand: 'POST /v1/sandboxes/{id}/exec';
  getAccount: 'GET /v1/account';
  getAllowlist: 'GET /v1/allowlist';
  getMcpConfig: 'GET /v1/mcp/config';
  getProcessOutput: 'GET /v1/sandboxes/{id}/processes/{procId}/output';
  getSandbox: 'GET /v1/sandboxes/{id}';
  getSnapshot: 'GET /v1/snapshots/{snapshotId}';
  globFiles: 'GET /v1/sandboxes/{id}/files/glob';
  grepFiles: 'GET /v1/sandboxes/{id}/files/grep';
  listApiKeys: 'GET /v1/api-keys';
  listDirectory: 'GET /v1/sandboxes/{id}/files/ls';
  listEvents: 'GET /v1/events';
  listPreviews: 'GET /v1/sandboxes/{id}/previews';
  listProcesses: 'GET /v1/sandboxes/{id}/processes';
  listSandboxes: 'GET /v1/sandboxes';
  listSecrets: 'GET /v1/secrets';
  listSnapshots: 'GET /v1/snapshots';
  listWebhookDeliveries: 'GET /v1/webhooks/{webhookId}/deliveries';
  listWebhooks: 'GET /v1/webhooks';
  login: 'POST /v1/auth/login';
  makeDir: 'POST /v1/sandboxes/{id}/files/mkdir';
  mcpMessage: 'POST /v1/mcp';
  movePath: 'POST /v1/sandboxes/{id}/files/move';
  openTerminal: 'GET /v1/sandboxes/{id}/terminal';
  readRaw: 'GET /v1/sandboxes/{id}/files/raw';
  removePath: 'DELETE /v1/sandboxes/{id}/files';
  revokeApiKey: 'DELETE /v1/api-keys/{keyId}';
  rotateWebhookSecret: 'POST /v1/webhooks/{webhookId}/secret';
  setAllowlist: 'PUT /v1/allowlist';
  setSandboxNetwork: 'PATCH /v1/sandboxes/{id}/network';
  setSandboxTimeout: 'POST /v1/sandboxes/{id}/timeout';
  signup: 'POST /v1/auth/signup';
  statPath: 'GET /v1/sandboxes/{id}/files/stat';
  stopProcess: 'DELETE /v1/sandboxes/{id}/processes/{procId}';
  testWebhook: 'POST /v1/webhooks/{webhookId}/test';
  uploadArchive: 'PUT /v1/sandboxes/{id}/files/archive';
  viewFile: 'GET /v1/sandboxes/{id}/files';
  writeProcessStdin: 'POST /v1/sandboxes/{id}/processes/{procId}/stdin';
  writeRaw: 'PUT /v1/sandboxes/{id}/files/raw';
}
