// The one closed list of error codes Paddock answers with. Clients branch on `code`, so a code,
// once shipped, keeps its meaning and its status forever; add new ones, never repurpose.
export const errorCatalogue = {
  invalid_json: { status: 400, title: 'The request body is not valid JSON' },
  invalid_request: { status: 400, title: 'The request is not valid' },
  missing_credential: { status: 401, title: 'No credential was sent' },
  invalid_credential: { status: 401, title: 'The credential is not valid' },
  wrong_credential_type: { status: 401, title: 'This route takes the other credential type' },
  preview_unauthorized: { status: 401, title: 'The preview needs a valid preview token for this sandbox and port' },
  invalid_login: { status: 401, title: 'The email or password is wrong' },
  command_not_allowed: { status: 403, title: 'The command is not on the allowlist' },
  permission_denied: { status: 403, title: 'The sandbox user may not access this path' },
  not_found: { status: 404, title: 'No such route' },
  api_key_not_found: { status: 404, title: 'No such API key' },
  sandbox_not_found: { status: 404, title: 'No such sandbox' },
  secret_not_found: { status: 404, title: 'No such secret' },
  file_not_found: { status: 404, title: 'No such file or directory' },
  event_not_found: { status: 404, title: 'No such event' },
  webhook_not_found: { status: 404, title: 'No such webhook endpoint' },
  process_not_found: { status: 404, title: 'No such background process' },
  preview_not_found: { status: 404, title: 'The sandbox has no preview of this port' },
  snapshot_not_found: { status: 404, title: 'No such snapshot' },
  method_not_allowed: { status: 405, title: 'The route does not allow this method' },
  not_acceptable: { status: 406, title: 'The requested media type cannot be produced' },
  upgrade_required: { status: 426, title: 'This route takes a WebSocket upgrade' },
  email_taken: { status: 409, title: 'An account with this email already exists' },
  idempotency_conflict: { status: 409, title: 'A request with this idempotency key is still in progress' },
  sandbox_not_running: { status: 409, title: 'The sandbox is not running' },
  process_not_running: { status: 409, title: 'The background process has ended' },
  snapshot_not_ready: { status: 409, title: 'The snapshot is not ready' },
  snapshot_corrupt: { status: 409, title: 'The snapshot is damaged and cannot be restored' },
  file_exists: { status: 409, title: 'The file already exists' },
  is_a_directory: { status: 409, title: 'The path is a directory' },
  not_a_directory: { status: 409, title: 'A path component is not a directory' },
  not_a_regular_file: { status: 409, title: 'The path is not a regular file' },
  file_io_error: { status: 409, title: "The sandbox's file system could not read or write the path" },
  directory_not_empty: { status: 409, title: 'The directory is not empty' },
  payload_too_large: { status: 413, title: 'The request body is too large' },
  file_too_large: { status: 413, title: 'The file is too large' },
  range_not_satisfiable: { status: 416, title: 'The range asked for is not within the file' },
  headers_too_large: { status: 431, title: 'The request headers are too large' },
  unsupported_media_type: { status: 415, title: 'The request body is not of a media type this route takes' },
  idempotency_key_reused: { status: 422, title: 'The idempotency key was used with a different request' },
  image_not_allowed: { status: 422, title: 'The operator does not allow this image' },
  image_not_supported: { status: 422, title: 'This service cannot run this image' },
  secret_limit_reached: { status: 422, title: 'The limit on secrets is reached' },
  webhook_url_not_allowed: { status: 422, title: 'Webhooks may not be sent to this URL' },
  webhook_limit_reached: { status: 422, title: 'The limit on webhook endpoints is reached' },
  edit_no_match: { status: 422, title: 'The text to replace was not found' },
  edit_ambiguous: { status: 422, title: 'The text to replace occurs more than once' },
  invalid_archive: { status: 422, title: 'The archive is not valid or holds members that may not be extracted' },
  timeout_past_cap: { status: 422, title: "The timeout would end the sandbox past its session cap" },
  rate_limited: { status: 429, title: 'Too many requests' },
  concurrent_sandbox_limit_reached: { status: 429, title: 'The concurrent sandbox limit is reached' },
  monthly_usage_limit_reached: { status: 429, title: 'The monthly sandbox-hour limit is used up' },
  process_limit_reached: { status: 429, title: 'The limit on running background processes in the sandbox is reached' },
  insufficient_scope: { status: 403, title: 'The API key lacks the scope this route needs' },
  egress_not_permitted: { status: 403, title: 'The egress asked for opens more than this deployment allows' },
  too_many_in_flight: { status: 429, title: 'Too many requests of this kind are in progress' },
  preview_limit_reached: { status: 429, title: 'The limit on previewed ports in the sandbox is reached' },
  snapshot_storage_limit_reached: { status: 429, title: "The account's snapshot storage limit is reached" },
  internal_error: { status: 500, title: 'Internal server error' },
  service_unavailable: { status: 503, title: 'The service is temporarily unavailable' },
  server_busy: { status: 503, title: 'Too many connections from this address without credentials' },
  preview_busy: { status: 503, title: "The limit on connections through the sandbox's previews is reached" },
  port_not_listening: { status: 502, title: 'Nothing listens on this port in the sandbox' },
  operation_timed_out: { status: 504, title: 'The operation did not finish in time' },
  insufficient_storage: { status: 507, title: "The sandbox's disk is full" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

export const errorCodes = Object.keys(errorCatalogue) as ErrorCode[];

export function problemType(code: ErrorCode): string {
  return `urn:paddock:error:${code}`;
}

/** An error meant for the client: its code, detail and extra members go into the problem document. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    detail?: string,
    options: { headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    // A client's error (4xx) is an answer, not a fault: nothing reads its stack, and capturing one
    // (async frames through every middleware included) was 12% of the web's CPU per refusal in
    // bench/refusals.ts, where an attacker's loop gets thousands. A 5xx keeps its stack for the log.
    const limit = Error.stackTraceLimit;
    if (errorCatalogue[code].status < 500) Error.stackTraceLimit = 0;
    super(detail ?? errorCatalogue[code].title);
    Error.stackTraceLimit = limit;
    this.code = code;
    this.status = errorCatalogue[code].status;
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
  }
}

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  requestId: string;
  [extra: string]: unknown;
}

export function problemDocument(err: ApiError, requestId: string): ProblemDocument {
  return {
    ...err.extra,
    type: problemType(err.code),
    title: errorCatalogue[err.code].title,
    status: err.status,
    detail: err.message,
    code: err.code,
    requestId,
  };
}
