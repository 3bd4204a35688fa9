/** What to do about each API error code, told to the person at the terminal. */
export function hintFor(code: string, retryAfter?: number): string | undefined {
  switch (code) {
    case 'missing_credential':
    case 'invalid_credential':
      return 'Run `paddock login` for a new API key, or set a valid one with `paddock config set-key` (or PADDOCK_API_KEY); no account yet: `paddock signup`.';
    case 'wrong_credential_type':
      return 'API keys work on sandbox routes, email and password on key management; check PADDOCK_API_KEY and `paddock config show`.';
    case 'invalid_login':
      return 'Check the email and password (the password is case-sensitive).';
    case 'email_taken':
      return 'Use another email; if the account is yours, `paddock login` gives this CLI a new key for it.';
    case 'api_key_not_found':
      return 'List the account\'s keys with `paddock keys ls`.';
    case 'sandbox_not_found':
      return 'List your sessions with `paddock session ls` (add --all for destroyed ones).';
    case 'sandbox_not_running':
      return 'The session is not running (still starting, or destroyed): check it with `paddock session get`.';
    case 'timeout_past_cap':
      return 'A session ends at its session cap at the latest: give a shorter timeout (the message says the latest end).';
    case 'concurrent_sandbox_limit_reached':
      return 'Destroy a session you no longer need (`paddock session ls`, then `paddock session rm <session_id>`), then try again.';
    case 'monthly_usage_limit_reached':
      return 'The sandbox-hours of this month are used up; they renew on the 1st (UTC). See `paddock whoami`.';
    case 'rate_limited':
      return retryAfter !== undefined ? `Wait ${retryAfter} s, then try again.` : 'Wait a little, then try again.';
    case 'command_not_allowed':
      return 'The account\'s allowlist does not include this program: see `paddock allowlist get`, change it with `paddock allowlist set`.';
    case 'file_not_found':
      return 'Check the path with `paddock files ls` (relative paths start at /workspace).';
    case 'file_exists':
      return 'Leave out --no-overwrite to replace the file.';
    case 'is_a_directory':
      return 'The path is a directory: list it with `paddock files ls <path>`.';
    case 'not_a_directory':
      return 'A part of the path is a file, not a directory.';
    case 'edit_no_match':
      return 'The --old text must match the file exactly, whitespace included: look at it with `paddock files view`.';
    case 'edit_ambiguous':
      return 'Give more surrounding text in --old so that it matches once, or pass --all to replace every occurrence.';
    case 'webhook_not_found':
      return 'List your webhooks with `paddock webhooks ls`.';
    case 'webhook_url_not_allowed':
      return 'Webhooks go to public https:// URLs only (never localhost or private, link-local or metadata addresses).';
    case 'webhook_limit_reached':
      return 'Remove an endpoint you no longer need (`paddock webhooks ls`, then `paddock webhooks rm <webhook_id>`).';
    case 'event_not_found':
      return 'The event is unknown or older than the retention period: run `paddock events` without --after.';
    case 'secret_not_found':
      return 'List secrets with `paddock secrets ls` (add --session <session_id> for a session\'s own secrets).';
    case 'image_not_supported':
      return 'Leave out --image: this service runs its own image only.';
    case 'image_not_allowed':
      return 'Leave out --image to use the default image, or ask the operator which images are allowed.';
    case 'payload_too_large':
    case 'file_too_large':
      return 'The content is over the size limit of the service.';
    case 'invalid_request':
    case 'invalid_json':
      return 'Check the arguments against `--help`.';
    case 'idempotency_conflict':
      return 'The same request is still in progress: wait for it, then try again.';
    case 'server_busy':
      return 'Too many connections come from your address without credentials: try again shortly.';
    case 'internal_error':
    case 'service_unavailable':
      return 'The service had a problem: try again shortly, and quote the request id if it persists.';
    case 'unexpected_response':
    case 'not_found':
    case 'method_not_allowed':
      return 'Is the base URL a Paddock API? Check it with `paddock config show`.';
    default:
      return undefined;
  }
}
