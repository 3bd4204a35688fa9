# Generated from the OpenAPI document by scripts/gen-python-types.ts (`npm run gen:types`): do not
# edit. The names are the document's component schemas; a nested object is named after its place.
"""The API's objects as TypedDicts (what the SDK's methods answer), generated from its OpenAPI document."""

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

#: A JSON object whose members the SDK does not type.
Json = Dict[str, Any]

#: Every code an error's problem document can carry.
ErrorCode = Literal[
    "invalid_json",
    "invalid_request",
    "missing_credential",
    "invalid_credential",
    "wrong_credential_type",
    "preview_unauthorized",
    "invalid_login",
    "command_not_allowed",
    "permission_denied",
    "not_found",
    "api_key_not_found",
    "sandbox_not_found",
    "secret_not_found",
    "file_not_found",
    "event_not_found",
    "webhook_not_found",
    "process_not_found",
    "preview_not_found",
    "snapshot_not_found",
    "method_not_allowed",
    "not_acceptable",
    "upgrade_required",
    "email_taken",
    "idempotency_conflict",
    "sandbox_not_running",
    "process_not_running",
    "snapshot_not_ready",
    "snapshot_corrupt",
    "file_exists",
    "is_a_directory",
    "not_a_directory",
    "not_a_regular_file",
    "file_io_error",
    "directory_not_empty",
    "payload_too_large",
    "file_too_large",
    "range_not_satisfiable",
    "headers_too_large",
    "unsupported_media_type",
    "idempotency_key_reused",
    "image_not_allowed",
    "image_not_supported",
    "secret_limit_reached",
    "webhook_url_not_allowed",
    "webhook_limit_reached",
    "edit_no_match",
    "edit_ambiguous",
    "invalid_archive",
    "timeout_past_cap",
    "rate_limited",
    "concurrent_sandbox_limit_reached",
    "monthly_usage_limit_reached",
    "process_limit_reached",
    "insufficient_scope",
    "egress_not_permitted",
    "too_many_in_flight",
    "preview_limit_reached",
    "snapshot_storage_limit_reached",
    "internal_error",
    "service_unavailable",
    "server_busy",
    "preview_busy",
    "port_not_listening",
    "operation_timed_out",
    "insufficient_storage",
]


class AccountUsageSandboxHours(TypedDict):
    """The AccountUsageSandboxHours object of the API."""

    #: Sandbox-hours used this calendar month (UTC)
    used: float
    limit: float


class AccountUsageConcurrentSandboxes(TypedDict):
    """The AccountUsageConcurrentSandboxes object of the API."""

    active: int
    limit: int


class AccountUsageSnapshotStorage(TypedDict):
    """The AccountUsageSnapshotStorage object of the API."""

    #: Bytes the account's ready snapshots hold, as stored
    usedBytes: int
    limitBytes: int


class AccountUsage(TypedDict):
    """The AccountUsage object of the API."""

    sandboxHours: AccountUsageSandboxHours
    concurrentSandboxes: AccountUsageConcurrentSandboxes
    snapshotStorage: AccountUsageSnapshotStorage


class AccountPeriod(TypedDict):
    """The AccountPeriod object of the API."""

    #: RFC 3339 UTC timestamp
    start: str
    #: RFC 3339 UTC timestamp
    end: str


class Account(TypedDict):
    """The Account object of the API."""

    id: str
    email: str
    usage: AccountUsage
    period: AccountPeriod


class CreateApiKeyRequest(TypedDict, total=False):
    """The CreateApiKeyRequest object of the API."""

    #: A label to tell keys apart; defaults to "default"
    name: str
    #: What the key may do; every scope when omitted. One or more of: sandboxes:read, sandboxes:write, exec, files:read, files:write, secrets:write, allowlist:write, webhooks:write, previews:write, snapshots:write, network:write
    scopes: List[Literal["sandboxes:read", "sandboxes:write", "exec", "files:read", "files:write", "secrets:write", "allowlist:write", "webhooks:write", "previews:write", "snapshots:write", "network:write"]]


class CreateApiKeyResponse(TypedDict):
    """The CreateApiKeyResponse object of the API."""

    id: str
    name: str
    #: The raw key (pdk_live_…); shown this once and never again
    key: str
    #: What the key may do
    scopes: List[Literal["sandboxes:read", "sandboxes:write", "exec", "files:read", "files:write", "secrets:write", "allowlist:write", "webhooks:write", "previews:write", "snapshots:write", "network:write"]]
    start: str
    #: RFC 3339 UTC timestamp
    createdAt: str


class CreateFileRequest(TypedDict, total=False):
    """The CreateFileRequest object of the API."""

    #: The content as text, written as UTF-8
    content: str
    #: The content as base64 (any bytes)
    contentBase64: str


class CreateFileResponse(TypedDict):
    """The CreateFileResponse object of the API."""

    path: str
    size: int
    #: An existing file was replaced
    overwritten: bool


class _CreatePreviewRequestRequired(TypedDict):
    #: A TCP port a program in the sandbox listens on (on loopback or on every address)
    port: int


class CreatePreviewRequest(_CreatePreviewRequestRequired, total=False):
    """The CreatePreviewRequest object of the API."""

    #: Open to everyone, no token needed. A new preview is private; an existing one keeps its setting unless this is given
    public: bool
    #: The new token's lifetime
    expiresInSeconds: int


class CreatePreviewResponse(TypedDict):
    """The CreatePreviewResponse object of the API."""

    port: int
    url: str
    public: bool
    #: When this token expires
    expiresAt: str
    #: Sent as X-Paddock-Preview-Token by programs; opens this port of this sandbox only
    token: str
    #: The URL with the token, for a browser: it is traded for a host-only HttpOnly cookie
    signedUrl: str


class CreateSandboxRequestNetworkEgress2(TypedDict):
    """The CreateSandboxRequestNetworkEgress2 object of the API."""

    #: Where its programs may connect (and, for domains, which names its DNS answers); nothing else
    allow: List[str]


class CreateSandboxRequestNetwork(TypedDict):
    """Where its programs may connect: the operator's default (PADDOCK_DEFAULT_EGRESS) when omitted; another needs the scope network:write"""

    egress: Union[Literal["none", "all"], CreateSandboxRequestNetworkEgress2]


class CreateSandboxRequest(TypedDict, total=False):
    """The CreateSandboxRequest object of the API."""

    #: Container image; the operator's default when omitted. Ignored by the local runtime.
    image: str
    metadata: Dict[str, str]
    #: Environment variables every exec in the sandbox starts with. While a command allowlist is in force, variables that decide which code runs (PATH, LD_*, BASH_ENV…) are refused here, as in exec.
    env: Dict[str, str]
    #: Its own end, this many seconds after its create (expiresAt); at most the session cap, which is the default
    timeoutSeconds: int
    #: A ready snapshot of the account's (snap_…): the sandbox's /workspace starts as it was, and its image is the snapshot's unless `image` names one
    snapshot: str
    #: Where its programs may connect: the operator's default (PADDOCK_DEFAULT_EGRESS) when omitted; another needs the scope network:write
    network: CreateSandboxRequestNetwork
    #: Snapshot its workspace when it is destroyed, by a DELETE or at its expiresAt (its processes are ended first); the destroyed sandbox's finalSnapshotId names the snapshot. Needs the scope snapshots:write
    snapshotOnDestroy: bool


class _CreateSecretRequestInjectRequired(TypedDict):
    #: The hosts whose HTTPS requests from the sandbox get the header (only where the sandbox's egress policy reaches them)
    hosts: List[str]


class CreateSecretRequestInject(_CreateSecretRequestInjectRequired, total=False):
    """Brokered instead of exposed: the secret is in no environment; the sandbox's egress sets the header on its HTTPS requests to these hosts, so a program uses the credential without being able to read it"""

    #: The header set (replacing one of the same name the program sent); default Authorization
    header: str
    #: The header's value, {value} standing for the secret's; default "Bearer {value}"
    format: str


class _CreateSecretRequestRequired(TypedDict):
    name: str
    #: Stored encrypted; never returned by any route
    value: str


class CreateSecretRequest(_CreateSecretRequestRequired, total=False):
    """The CreateSecretRequest object of the API."""

    #: Scope the secret to one sandbox; account-wide when omitted
    sandboxId: str
    #: Brokered instead of exposed: the secret is in no environment; the sandbox's egress sets the header on its HTTPS requests to these hosts, so a program uses the credential without being able to read it
    inject: CreateSecretRequestInject


class CreateSecretResponseInject(TypedDict):
    """Brokered instead of exposed: the secret is in no environment; the sandbox's egress sets the header on its HTTPS requests to these hosts, so a program uses the credential without being able to read it"""

    #: The hosts whose HTTPS requests from the sandbox get the header (only where the sandbox's egress policy reaches them)
    hosts: List[str]
    #: The header set (replacing one of the same name the program sent); default Authorization
    header: str
    #: The header's value, {value} standing for the secret's; default "Bearer {value}"
    format: str


class CreateSecretResponse(TypedDict):
    """The CreateSecretResponse object of the API."""

    name: str
    sandboxId: Optional[str]
    #: RFC 3339 UTC timestamp
    createdAt: str
    #: How the secret is brokered; null for one given to execs as an environment variable
    inject: Optional[CreateSecretResponseInject]


class CreateSnapshotRequest(TypedDict, total=False):
    """The CreateSnapshotRequest object of the API."""

    #: A name of your own for it
    name: str


class CreateTerminalTicketResponse(TypedDict):
    """The CreateTerminalTicketResponse object of the API."""

    #: Single use, for this sandbox only; never logged
    ticket: str
    #: RFC 3339 UTC timestamp
    expiresAt: str


class _CreateWebhookRequestRequired(TypedDict):
    #: Where events are POSTed: https (http only for localhost and 127.0.0.1 when the operator sets PADDOCK_WEBHOOK_ALLOW_LOCAL, for development). A delivery never connects to a loopback, private, link-local or metadata address, checked on the address it connects to.
    url: str


class CreateWebhookRequest(_CreateWebhookRequestRequired, total=False):
    """The CreateWebhookRequest object of the API."""

    #: Event types to send; every type ("*") when omitted
    events: List[Literal["sandbox.created", "sandbox.running", "sandbox.failed", "sandbox.expiring", "sandbox.destroyed", "preview.created", "preview.revoked", "snapshot.created", "snapshot.failed", "snapshot.deleted", "network.refused", "usage.threshold", "webhook.disabled", "*"]]
    description: str


class CreateWebhookResponse(TypedDict):
    """The CreateWebhookResponse object of the API."""

    #: wh_…
    id: str
    url: str
    #: ["*"]: every type
    events: List[str]
    description: Optional[str]
    #: RFC 3339 UTC timestamp
    createdAt: str
    #: Set when it failed for the whole retry window; a test event it answers re-enables it
    disabledAt: Optional[str]
    disabledReason: Optional[str]
    #: whsec_…: the Standard Webhooks signing secret, shown this once
    secret: str


#: The archive as tar produces it in the sandbox: a directory as `./…` members, any other path as its one member
DownloadArchiveResponse = str


class _EditFileRequestRequired(TypedDict):
    #: The exact text to replace
    oldText: str
    newText: str


class EditFileRequest(_EditFileRequestRequired, total=False):
    """The EditFileRequest object of the API."""

    #: Replace every occurrence (else it must occur exactly once)
    replaceAll: bool


class EditFileResponse(TypedDict):
    """The EditFileResponse object of the API."""

    path: str
    replacements: int


class ExecCommandResponse(TypedDict):
    """The ExecCommandResponse object of the API."""

    #: proc_…
    id: str
    #: The command as lists show it: a string as given, an argv shell-quoted; at most 1024 characters
    command: str
    #: RFC 3339 UTC timestamp
    startedAt: str


class _ExecRequestRequired(TypedDict):
    command: Union[str, List[str]]


class ExecRequest(_ExecRequestRequired, total=False):
    """The ExecRequest object of the API."""

    #: Working directory; default /workspace
    cwd: str
    env: Dict[str, str]
    #: Sent to the command as standard input (UTF-8), then closed
    stdin: str
    #: Default 60; the operator sets the maximum
    timeoutSeconds: float
    #: Start it as a background process and answer 202 at once (not with stdin or timeoutSeconds); see /processes
    background: bool


class ExecResult(TypedDict):
    """The ExecResult object of the API."""

    #: null when a signal ended the command
    exitCode: Optional[int]
    #: SIGKILL, SIGTERM… when a signal ended it
    signal: Optional[str]
    stdout: str
    stderr: str
    stdoutTruncated: bool
    stderrTruncated: bool
    durationMs: int
    timedOut: bool


class ExecStreamEventStdoutStderr(TypedDict):
    """The ExecStreamEventStdoutStderr object of the API."""

    type: Literal["stdout", "stderr"]
    data: str


class ExecStreamEventExit(TypedDict):
    """The ExecStreamEventExit object of the API."""

    type: Literal["exit"]
    exitCode: Optional[int]
    signal: Optional[str]
    timedOut: bool
    durationMs: int
    stdoutTruncated: bool
    stderrTruncated: bool


class ExecStreamEventError(TypedDict):
    """The ExecStreamEventError object of the API."""

    type: Literal["error"]
    code: str
    detail: str


ExecStreamEvent = Union[ExecStreamEventStdoutStderr, ExecStreamEventExit, ExecStreamEventError]


class GetAllowlistResponse(TypedDict):
    """The GetAllowlistResponse object of the API."""

    #: Programs every exec may run; empty means every command is allowed
    commands: List[str]
    updatedAt: Optional[str]


class GetMcpConfigResponsePath(TypedDict):
    """Where the client keeps the file, per OS (`~` is the home folder; a project-scope path is relative to the project)"""

    macos: str
    linux: str
    windows: str


class GetMcpConfigResponse(TypedDict):
    """The GetMcpConfigResponse object of the API."""

    target: Literal["claude-desktop", "claude-code", "cursor", "windsurf", "vscode", "codex", "gemini", "zed"]
    scope: Literal["user", "project"]
    #: Where the client keeps the file, per OS (`~` is the home folder; a project-scope path is relative to the project)
    path: GetMcpConfigResponsePath
    #: jsonc: JSON with comments
    format: Literal["json", "jsonc", "toml"]
    transport: Literal["stdio", "http"]
    #: The text to merge into that file: the paddock server entry, which runs `paddock mcp serve` and holds no key
    snippet: str


class GetProcessOutputResponseStdoutStderr(TypedDict):
    """The GetProcessOutputResponseStdoutStderr object of the API."""

    type: Literal["stdout", "stderr"]
    data: str


class GetProcessOutputResponseExit(TypedDict):
    """The GetProcessOutputResponseExit object of the API."""

    type: Literal["exit"]
    exitCode: Optional[int]
    signal: Optional[str]
    endedAt: Optional[str]


class GetProcessOutputResponseError(TypedDict):
    """The GetProcessOutputResponseError object of the API."""

    type: Literal["error"]
    code: str
    detail: str


GetProcessOutputResponse = Union[GetProcessOutputResponseStdoutStderr, GetProcessOutputResponseExit, GetProcessOutputResponseError]


class GlobFilesResponse(TypedDict):
    """The GlobFilesResponse object of the API."""

    pattern: str
    #: Absolute paths, sorted
    matches: List[str]
    truncated: bool


class GrepFilesResponseMatches(TypedDict):
    """The GrepFilesResponseMatches object of the API."""

    path: str
    line: int
    text: str


class GrepFilesResponse(TypedDict):
    """The GrepFilesResponse object of the API."""

    pattern: str
    matches: List[GrepFilesResponseMatches]
    truncated: bool


class ListApiKeysResponseData(TypedDict):
    """The ListApiKeysResponseData object of the API."""

    id: str
    name: str
    #: What the key may do
    scopes: List[Literal["sandboxes:read", "sandboxes:write", "exec", "files:read", "files:write", "secrets:write", "allowlist:write", "webhooks:write", "previews:write", "snapshots:write", "network:write"]]
    #: The first characters of the key, to recognise it
    start: str
    #: RFC 3339 UTC timestamp
    createdAt: str
    lastUsedAt: Optional[str]


class ListApiKeysResponse(TypedDict):
    """The ListApiKeysResponse object of the API."""

    data: List[ListApiKeysResponseData]


class ListDirectoryResponseEntries(TypedDict):
    """The ListDirectoryResponseEntries object of the API."""

    name: str
    type: Literal["file", "dir", "symlink", "other"]
    #: Bytes (of a symlink: its target name)
    size: int
    #: RFC 3339 UTC timestamp
    modifiedAt: str


class ListDirectoryResponse(TypedDict):
    """The ListDirectoryResponse object of the API."""

    path: str
    entries: List[ListDirectoryResponseEntries]
    truncated: bool


class ListEventsResponseData(TypedDict):
    """The ListEventsResponseData object of the API."""

    #: evt_…
    id: str
    type: Literal["sandbox.created", "sandbox.running", "sandbox.failed", "sandbox.expiring", "sandbox.destroyed", "preview.created", "preview.revoked", "snapshot.created", "snapshot.failed", "snapshot.deleted", "network.refused", "usage.threshold", "webhook.disabled", "webhook.test"]
    #: RFC 3339 UTC timestamp
    createdAt: str
    #: sandbox.*: {sandbox} as it was right after the transition (sandbox.destroyed carries its destroyReason); usage.threshold: {threshold: 80|100, usage: {sandboxHours: {used, limit}}, period: {start, end}}; webhook.disabled: {webhook: {id, url, disabledAt, lastEventId}}; webhook.test: {webhook: {id}}
    data: Dict[str, Any]


class ListEventsResponse(TypedDict):
    """The ListEventsResponse object of the API."""

    data: List[ListEventsResponseData]


#: Server-Sent Events: one event per frame, "id:" the event id, "event:" its type, "data:" the event object. Without a cursor (after or Last-Event-ID) the stream starts with the next event; it resumes after Last-Event-ID.
ListEventsStream = str


class ListPreviewsResponseData(TypedDict):
    """The ListPreviewsResponseData object of the API."""

    port: int
    url: str
    public: bool
    #: When the last token made for the port expires
    expiresAt: str


class ListPreviewsResponse(TypedDict):
    """The ListPreviewsResponse object of the API."""

    data: List[ListPreviewsResponseData]


class ListProcessesResponseData(TypedDict):
    """The ListProcessesResponseData object of the API."""

    id: str
    command: str
    #: RFC 3339 UTC timestamp
    startedAt: str
    status: Literal["running", "exited"]
    #: null while it runs, when a signal ended it, or when its end was never recorded
    exitCode: Optional[int]
    #: SIGTERM, SIGKILL… when a signal ended it
    signal: Optional[str]
    endedAt: Optional[str]


class ListProcessesResponse(TypedDict):
    """The ListProcessesResponse object of the API."""

    data: List[ListProcessesResponseData]


class ListSecretsResponseDataInject(TypedDict):
    """Brokered instead of exposed: the secret is in no environment; the sandbox's egress sets the header on its HTTPS requests to these hosts, so a program uses the credential without being able to read it"""

    #: The hosts whose HTTPS requests from the sandbox get the header (only where the sandbox's egress policy reaches them)
    hosts: List[str]
    #: The header set (replacing one of the same name the program sent); default Authorization
    header: str
    #: The header's value, {value} standing for the secret's; default "Bearer {value}"
    format: str


class ListSecretsResponseData(TypedDict):
    """The ListSecretsResponseData object of the API."""

    name: str
    sandboxId: Optional[str]
    #: RFC 3339 UTC timestamp
    createdAt: str
    #: How the secret is brokered; null for one given to execs as an environment variable
    inject: Optional[ListSecretsResponseDataInject]


class ListSecretsResponse(TypedDict):
    """The ListSecretsResponse object of the API."""

    data: List[ListSecretsResponseData]


class ListWebhookDeliveriesResponseData(TypedDict):
    """The ListWebhookDeliveriesResponseData object of the API."""

    eventId: str
    eventType: str
    attempt: int
    statusCode: Optional[int]
    #: Why the attempt failed, in Paddock's words (never the receiver's beyond its status); null for a 2xx. A host that resolves to an address webhooks may not reach, or to none, reads "<host> does not resolve to an address webhooks may be sent to: not connected to", never naming the address
    error: Optional[str]
    durationMs: int
    #: RFC 3339 UTC timestamp
    createdAt: str
    nextRetryAt: Optional[str]


class ListWebhookDeliveriesResponse(TypedDict):
    """The ListWebhookDeliveriesResponse object of the API."""

    data: List[ListWebhookDeliveriesResponseData]


class ListWebhooksResponseData(TypedDict):
    """The ListWebhooksResponseData object of the API."""

    #: wh_…
    id: str
    url: str
    #: ["*"]: every type
    events: List[str]
    description: Optional[str]
    #: RFC 3339 UTC timestamp
    createdAt: str
    #: Set when it failed for the whole retry window; a test event it answers re-enables it
    disabledAt: Optional[str]
    disabledReason: Optional[str]


class ListWebhooksResponse(TypedDict):
    """The ListWebhooksResponse object of the API."""

    data: List[ListWebhooksResponseData]


class LoginRequest(TypedDict):
    """The LoginRequest object of the API."""

    email: str
    password: str


class LoginResponse(TypedDict):
    """The LoginResponse object of the API."""

    #: Dashboard session token (JWT); accepted by /v1/api-keys routes only
    token: str
    #: RFC 3339 UTC timestamp
    expiresAt: str


class _McpMessageRequestErrorRequired(TypedDict):
    code: int
    message: str


class McpMessageRequestError(_McpMessageRequestErrorRequired, total=False):
    """The McpMessageRequestError object of the API."""

    data: Any


class _McpMessageRequestRequired(TypedDict):
    jsonrpc: Literal["2.0"]


class McpMessageRequest(_McpMessageRequestRequired, total=False):
    """A JSON-RPC 2.0 message (MCP)"""

    id: Optional[Union[str, int]]
    method: str
    params: Dict[str, Any]
    result: Dict[str, Any]
    error: McpMessageRequestError


McpMessageResponse = Any


McpMessageStream = str


#: The MovePathRequest object of the API.
MovePathRequest = TypedDict(
    "MovePathRequest",
    {
        #: What to move (a symlink is moved itself). A path in the sandbox; relative paths are relative to /workspace. `..` and symlinks resolve inside the sandbox.
        "from": str,
        #: Its new name (not a directory to move it into); its parent directories are made. A path in the sandbox; relative paths are relative to /workspace. `..` and symlinks resolve inside the sandbox.
        "to": str,
        #: true: replace what is at `to` (a file, or an empty directory); else 409 file_exists
        "overwrite": bool,
    },
    total=False,
)


class MovePathResponse(TypedDict):
    """The MovePathResponse object of the API."""

    path: str


class Problem(TypedDict):
    """The Problem object of the API."""

    type: str
    title: str
    status: int
    detail: str
    code: Literal["invalid_json", "invalid_request", "missing_credential", "invalid_credential", "wrong_credential_type", "preview_unauthorized", "invalid_login", "command_not_allowed", "permission_denied", "not_found", "api_key_not_found", "sandbox_not_found", "secret_not_found", "file_not_found", "event_not_found", "webhook_not_found", "process_not_found", "preview_not_found", "snapshot_not_found", "method_not_allowed", "not_acceptable", "upgrade_required", "email_taken", "idempotency_conflict", "sandbox_not_running", "process_not_running", "snapshot_not_ready", "snapshot_corrupt", "file_exists", "is_a_directory", "not_a_directory", "not_a_regular_file", "file_io_error", "directory_not_empty", "payload_too_large", "file_too_large", "range_not_satisfiable", "headers_too_large", "unsupported_media_type", "idempotency_key_reused", "image_not_allowed", "image_not_supported", "secret_limit_reached", "webhook_url_not_allowed", "webhook_limit_reached", "edit_no_match", "edit_ambiguous", "invalid_archive", "timeout_past_cap", "rate_limited", "concurrent_sandbox_limit_reached", "monthly_usage_limit_reached", "process_limit_reached", "insufficient_scope", "egress_not_permitted", "too_many_in_flight", "preview_limit_reached", "snapshot_storage_limit_reached", "internal_error", "service_unavailable", "server_busy", "preview_busy", "port_not_listening", "operation_timed_out", "insufficient_storage"]
    requestId: str


#: The file's bytes, or the range of them asked for
ReadRawResponse = str


class RotateWebhookSecretResponse(TypedDict):
    """The RotateWebhookSecretResponse object of the API."""

    id: str
    #: The new whsec_… secret, shown this once
    secret: str
    #: Until then deliveries are signed with both secrets (two v1 signatures)
    previousSecretExpiresAt: str


class SandboxNetworkEgress2(TypedDict):
    """The SandboxNetworkEgress2 object of the API."""

    #: Where its programs may connect (and, for domains, which names its DNS answers); nothing else
    allow: List[str]


class SandboxNetwork(TypedDict):
    """Where the sandbox's programs may connect: none, all (outside the hard floor: loopback, private, link-local and metadata ranges, Paddock's own services and other sandboxes), or the listed domains, addresses and ranges"""

    egress: Union[Literal["none", "all"], SandboxNetworkEgress2]


class Sandbox(TypedDict):
    """The Sandbox object of the API."""

    id: str
    state: Literal["active", "destroyed"]
    status: Literal["pending", "running", "terminating", "terminated", "failed"]
    image: str
    #: RFC 3339 UTC timestamp
    createdAt: str
    readyAt: Optional[str]
    #: createdAt + the session cap, or its own timeout; the reaper destroys the sandbox then
    expiresAt: str
    destroyedAt: Optional[str]
    #: user: destroyed on request; expired: its expiresAt (the session cap or its own timeout); failed: never became ready
    destroyReason: Optional[Literal["user", "expired", "failed"]]
    #: Why a failed sandbox failed
    failureMessage: Optional[str]
    #: Its workspace is snapshotted when it is destroyed
    snapshotOnDestroy: bool
    #: The snapshot of its workspace taken as it was destroyed (snapshotOnDestroy), named as its copy begins (while the sandbox is terminating, that snapshot is pending); null until then, or when that snapshot failed (its snapshot.failed event says why)
    finalSnapshotId: Optional[str]
    #: Where the sandbox's programs may connect: none, all (outside the hard floor: loopback, private, link-local and metadata ranges, Paddock's own services and other sandboxes), or the listed domains, addresses and ranges
    network: SandboxNetwork
    #: Packets its egress filter refused (a refused connection is one), as the workers last recorded it with a network.refused event: at most once a minute; local runtime (on Kubernetes the network plugin refuses, uncounted)
    networkRefused: int
    metadata: Dict[str, str]


class SandboxListDataNetworkEgress2(TypedDict):
    """The SandboxListDataNetworkEgress2 object of the API."""

    #: Where its programs may connect (and, for domains, which names its DNS answers); nothing else
    allow: List[str]


class SandboxListDataNetwork(TypedDict):
    """Where the sandbox's programs may connect: none, all (outside the hard floor: loopback, private, link-local and metadata ranges, Paddock's own services and other sandboxes), or the listed domains, addresses and ranges"""

    egress: Union[Literal["none", "all"], SandboxListDataNetworkEgress2]


class SandboxListData(TypedDict):
    """The SandboxListData object of the API."""

    id: str
    state: Literal["active", "destroyed"]
    status: Literal["pending", "running", "terminating", "terminated", "failed"]
    image: str
    #: RFC 3339 UTC timestamp
    createdAt: str
    readyAt: Optional[str]
    #: createdAt + the session cap, or its own timeout; the reaper destroys the sandbox then
    expiresAt: str
    destroyedAt: Optional[str]
    #: user: destroyed on request; expired: its expiresAt (the session cap or its own timeout); failed: never became ready
    destroyReason: Optional[Literal["user", "expired", "failed"]]
    #: Why a failed sandbox failed
    failureMessage: Optional[str]
    #: Its workspace is snapshotted when it is destroyed
    snapshotOnDestroy: bool
    #: The snapshot of its workspace taken as it was destroyed (snapshotOnDestroy), named as its copy begins (while the sandbox is terminating, that snapshot is pending); null until then, or when that snapshot failed (its snapshot.failed event says why)
    finalSnapshotId: Optional[str]
    #: Where the sandbox's programs may connect: none, all (outside the hard floor: loopback, private, link-local and metadata ranges, Paddock's own services and other sandboxes), or the listed domains, addresses and ranges
    network: SandboxListDataNetwork
    #: Packets its egress filter refused (a refused connection is one), as the workers last recorded it with a network.refused event: at most once a minute; local runtime (on Kubernetes the network plugin refuses, uncounted)
    networkRefused: int
    metadata: Dict[str, str]


class SandboxList(TypedDict):
    """The SandboxList object of the API."""

    data: List[SandboxListData]
    #: Pass as ?after= for the next page; null on the last page
    next: Optional[str]


class SetAllowlistRequest(TypedDict):
    """The SetAllowlistRequest object of the API."""

    #: Program names (compared by basename); duplicates are removed and the list is sorted.
    commands: List[str]


class SetSandboxNetworkRequestEgress2(TypedDict):
    """The SetSandboxNetworkRequestEgress2 object of the API."""

    #: Where its programs may connect (and, for domains, which names its DNS answers); nothing else
    allow: List[str]


class SetSandboxNetworkRequest(TypedDict):
    """Where the sandbox's programs may connect: none, all (outside the hard floor: loopback, private, link-local and metadata ranges, Paddock's own services and other sandboxes), or the listed domains, addresses and ranges"""

    egress: Union[Literal["none", "all"], SetSandboxNetworkRequestEgress2]


class SetSandboxTimeoutRequest(TypedDict):
    """The SetSandboxTimeoutRequest object of the API."""

    #: The sandbox ends this many seconds from now: earlier or later than before, never past createdAt + the session cap
    timeoutSeconds: int


class SignupRequest(TypedDict):
    """The SignupRequest object of the API."""

    email: str
    password: str


class SignupResponseAccount(TypedDict):
    """The SignupResponseAccount object of the API."""

    id: str
    email: str
    #: RFC 3339 UTC timestamp
    createdAt: str


class SignupResponse(TypedDict):
    """The SignupResponse object of the API."""

    account: SignupResponseAccount
    token: str
    #: RFC 3339 UTC timestamp
    expiresAt: str


class Snapshot(TypedDict):
    """The Snapshot object of the API."""

    id: str
    name: Optional[str]
    #: The sandbox it was taken from
    sandboxId: str
    #: The image of that sandbox: a sandbox started from the snapshot gets it unless its create names another
    image: str
    status: Literal["pending", "ready", "failed"]
    #: A failed snapshot's reason: the error code a request would have been answered with
    failureCode: Optional[str]
    #: As stored, compressed: what counts against PADDOCK_QUOTA_SNAPSHOT_BYTES
    sizeBytes: int
    #: Files, directories and links in it
    files: int
    #: RFC 3339 UTC timestamp
    createdAt: str
    #: It is deleted then (PADDOCK_SNAPSHOT_RETENTION_DAYS after it was taken)
    expiresAt: str


class SnapshotListData(TypedDict):
    """The SnapshotListData object of the API."""

    id: str
    name: Optional[str]
    #: The sandbox it was taken from
    sandboxId: str
    #: The image of that sandbox: a sandbox started from the snapshot gets it unless its create names another
    image: str
    status: Literal["pending", "ready", "failed"]
    #: A failed snapshot's reason: the error code a request would have been answered with
    failureCode: Optional[str]
    #: As stored, compressed: what counts against PADDOCK_QUOTA_SNAPSHOT_BYTES
    sizeBytes: int
    #: Files, directories and links in it
    files: int
    #: RFC 3339 UTC timestamp
    createdAt: str
    #: It is deleted then (PADDOCK_SNAPSHOT_RETENTION_DAYS after it was taken)
    expiresAt: str


class SnapshotList(TypedDict):
    """The SnapshotList object of the API."""

    data: List[SnapshotListData]
    #: Pass as ?after= for the next page; null on the last page
    next: Optional[str]


class _StatPathResponseRequired(TypedDict):
    path: str
    #: What the path itself is: a final symlink is not followed
    type: Literal["file", "dir", "symlink", "other"]
    #: Bytes (of a symlink: its target name)
    size: int
    #: The permission bits, four octal digits (`0644`)
    mode: str
    #: RFC 3339 UTC timestamp
    modifiedAt: str


class StatPathResponse(_StatPathResponseRequired, total=False):
    """The StatPathResponse object of the API."""

    #: A symlink's target, as written in it
    target: str


class TestWebhookResponse(TypedDict):
    """The TestWebhookResponse object of the API."""

    #: evt_…
    id: str
    type: Literal["sandbox.created", "sandbox.running", "sandbox.failed", "sandbox.expiring", "sandbox.destroyed", "preview.created", "preview.revoked", "snapshot.created", "snapshot.failed", "snapshot.deleted", "network.refused", "usage.threshold", "webhook.disabled", "webhook.test"]
    #: RFC 3339 UTC timestamp
    createdAt: str
    #: sandbox.*: {sandbox} as it was right after the transition (sandbox.destroyed carries its destroyReason); usage.threshold: {threshold: 80|100, usage: {sandboxHours: {used, limit}}, period: {start, end}}; webhook.disabled: {webhook: {id, url, disabledAt, lastEventId}}; webhook.test: {webhook: {id}}
    data: Dict[str, Any]


class UploadArchiveResponse(TypedDict):
    """The UploadArchiveResponse object of the API."""

    #: The directory the archive was extracted under
    path: str
    #: Members extracted: files, directories and links
    files: int
    #: Bytes of the archive received, as sent (compressed or not)
    bytes: int


class _ViewFileResponseRequired(TypedDict):
    path: str
    encoding: Literal["utf-8", "base64"]
    startLine: int
    #: The last line answered (0 for an empty file)
    endLine: int
    totalLines: int
    #: Lines follow endLine
    truncated: bool
    #: The whole file's size in bytes
    size: int


class ViewFileResponse(_ViewFileResponseRequired, total=False):
    """The ViewFileResponse object of the API."""

    #: The lines as text, when encoding is utf-8
    content: str
    #: The lines as base64, when encoding is base64
    contentBase64: str


class WriteProcessStdinRequest(TypedDict):
    """The WriteProcessStdinRequest object of the API."""

    #: Written to the process's standard input (UTF-8), which stays open for the next write
    data: str

#: Every operation of the API, by operationId.
OPERATIONS: Dict[str, str] = {
    "clearAllowlist": "DELETE /v1/allowlist",
    "createApiKey": "POST /v1/api-keys",
    "createFile": "PUT /v1/sandboxes/{id}/files",
    "createPreview": "POST /v1/sandboxes/{id}/previews",
    "createSandbox": "POST /v1/sandboxes",
    "createSecret": "POST /v1/secrets",
    "createSnapshot": "POST /v1/sandboxes/{id}/snapshots",
    "createTerminalTicket": "POST /v1/sandboxes/{id}/terminal/tickets",
    "createWebhook": "POST /v1/webhooks",
    "deletePreview": "DELETE /v1/sandboxes/{id}/previews/{port}",
    "deleteSecret": "DELETE /v1/secrets/{name}",
    "deleteSnapshot": "DELETE /v1/snapshots/{snapshotId}",
    "deleteWebhook": "DELETE /v1/webhooks/{webhookId}",
    "destroySandbox": "DELETE /v1/sandboxes/{id}",
    "downloadArchive": "GET /v1/sandboxes/{id}/files/archive",
    "editFile": "PATCH /v1/sandboxes/{id}/files",
    "execCommand": "POST /v1/sandboxes/{id}/exec",
    "getAccount": "GET /v1/account",
    "getAllowlist": "GET /v1/allowlist",
    "getMcpConfig": "GET /v1/mcp/config",
    "getProcessOutput": "GET /v1/sandboxes/{id}/processes/{procId}/output",
    "getSandbox": "GET /v1/sandboxes/{id}",
    "getSnapshot": "GET /v1/snapshots/{snapshotId}",
    "globFiles": "GET /v1/sandboxes/{id}/files/glob",
    "grepFiles": "GET /v1/sandboxes/{id}/files/grep",
    "listApiKeys": "GET /v1/api-keys",
    "listDirectory": "GET /v1/sandboxes/{id}/files/ls",
    "listEvents": "GET /v1/events",
    "listPreviews": "GET /v1/sandboxes/{id}/previews",
    "listProcesses": "GET /v1/sandboxes/{id}/processes",
    "listSandboxes": "GET /v1/sandboxes",
    "listSecrets": "GET /v1/secrets",
    "listSnapshots": "GET /v1/snapshots",
    "listWebhookDeliveries": "GET /v1/webhooks/{webhookId}/deliveries",
    "listWebhooks": "GET /v1/webhooks",
    "login": "POST /v1/auth/login",
    "makeDir": "POST /v1/sandboxes/{id}/files/mkdir",
    "mcpMessage": "POST /v1/mcp",
    "movePath": "POST /v1/sandboxes/{id}/files/move",
    "openTerminal": "GET /v1/sandboxes/{id}/terminal",
    "readRaw": "GET /v1/sandboxes/{id}/files/raw",
    "removePath": "DELETE /v1/sandboxes/{id}/files",
    "revokeApiKey": "DELETE /v1/api-keys/{keyId}",
    "rotateWebhookSecret": "POST /v1/webhooks/{webhookId}/secret",
    "setAllowlist": "PUT /v1/allowlist",
    "setSandboxNetwork": "PATCH /v1/sandboxes/{id}/network",
    "setSandboxTimeout": "POST /v1/sandboxes/{id}/timeout",
    "signup": "POST /v1/auth/signup",
    "statPath": "GET /v1/sandboxes/{id}/files/stat",
    "stopProcess": "DELETE /v1/sandboxes/{id}/processes/{procId}",
    "testWebhook": "POST /v1/webhooks/{webhookId}/test",
    "uploadArchive": "PUT /v1/sandboxes/{id}/files/archive",
    "viewFile": "GET /v1/sandboxes/{id}/files",
    "writeProcessStdin": "POST /v1/sandboxes/{id}/processes/{procId}/stdin",
    "writeRaw": "PUT /v1/sandboxes/{id}/files/raw",
}
