import { checkBaseUrl } from './base-url.ts';
import { MalformedCredentialError, PaddockApiError, PaddockConnectionError, PaddockError } from './errors.ts';
import { connectTerminal, type Terminal, type TerminalOptions } from './terminal.ts';
import type {
  Account,
  Allowlist,
  ApiKeySummary,
  CreateFileInput,
  CreatePreviewInput,
  CreatedPreview,
  CreateSandboxInput,
  CreateSecretInput,
  CreateWebhookInput,
  CreatedApiKey,
  CreatedWebhook,
  RotatedWebhookSecret,
  Scope,
  DeliveryAttempt,
  EditFileInput,
  EditResult,
  ExecInput,
  ExecResult,
  ExecStreamEvent,
  FileStat,
  FileView,
  GlobInput,
  GlobResult,
  GrepInput,
  GrepResult,
  Listing,
  ListResponse,
  McpConfig,
  MovePathInput,
  NetworkPolicy,
  PaddockEvent,
  PreviewSummary,
  ProblemDocument,
  ProcessInfo,
  ProcessOutputEvent,
  ProcessSignal,
  RawFileBody,
  StartedProcess,
  Sandbox,
  SandboxListState,
  SandboxPage,
  Secret,
  Snapshot,
  SnapshotPage,
  SessionToken,
  SignupResult,
  ViewFileInput,
  Webhook,
  WrittenFile,
  DownloadArchiveInput,
  ExtractedArchive,
  UploadArchiveInput,
} from './types.ts';

export interface PaddockClientOptions {
  /** e.g. https://paddock.example.com; http:// only for localhost and 127.0.0.1. */
  baseUrl: string;
  /** API key (pdk_live_…): used by every route except /v1/api-keys. */
  apiKey?: string;
  /** Dashboard session token (JWT from signup or login): used by /v1/api-keys only. */
  token?: string;
  /** A fetch to use instead of the global one (tests, proxies). */
  fetch?: typeof fetch;
  /** Sent as User-Agent. */
  userAgent?: string;
  /**
   * How many times an idempotent call (GET, PUT, DELETE, and a create with an idempotency key) is
   * retried after a 429 or 503 that says when to come back, or after the API could not be reached
   * (GET only). Default 2; 0 turns retries off.
   */
  retries?: number;
  /** The longest Retry-After the client waits out itself; a longer one is thrown. Default 30 s. */
  maxRetryWaitSeconds?: number;
}

/** Per-call options. */
export interface CallOptions {
  signal?: AbortSignal;
}

type Credential = 'none' | 'apiKey' | 'token';
type Query = Record<string, string | number | boolean | undefined>;

interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  auth: Credential;
  query?: Query;
  body?: unknown;
  /** Bytes sent as they are, of their own media type (an archive); a stream is never sent twice. */
  raw?: { bytes: AsyncIterable<Uint8Array> | Uint8Array; contentType: string };
  headers?: Record<string, string>;
  accept?: string;
  signal?: AbortSignal;
}

const NDJSON = 'application/x-ndjson';

/** The credential as a header will carry it (fetch trims the ends); a refusal that never quotes it. */
function checkedCredential(value: string | undefined, which: 'apiKey' | 'token'): string | undefined {
  const sent = value?.trim();
  // An empty one is none, as before: the request goes without, and the API says which it wanted.
  if (!sent) return undefined;
  if (/[^\x21-\x7e]/.test(sent)) throw new MalformedCredentialError(which);
  return sent;
}

/**
 * The typed client of Paddock's HTTP API v1: one method per route. Errors are thrown as
 * PaddockApiError (the problem document's status, code, detail, requestId and Retry-After),
 * PaddockConnectionError (the API was not reached) or InsecureBaseUrlError (the https rule,
 * checked here in the constructor so no caller can get round it).
 */
export class PaddockClient {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #userAgent: string;
  readonly #options: PaddockClientOptions;

  constructor(options: PaddockClientOptions) {
    this.baseUrl = checkBaseUrl(options.baseUrl);
    // Checked here: fetch's own refusal of such a header quotes the value, the secret with it.
    this.#apiKey = checkedCredential(options.apiKey, 'apiKey');
    this.#token = checkedCredential(options.token, 'token');
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#userAgent = options.userAgent ?? 'paddock-client/0.1.0';
    this.#options = options;
  }

  /** The same client with a dashboard session token, for the /v1/api-keys routes. */
  withToken(token: string): PaddockClient {
    return new PaddockClient({ ...this.#options, baseUrl: this.baseUrl, token });
  }

  /** The same client with an API key. */
  withApiKey(apiKey: string): PaddockClient {
    return new PaddockClient({ ...this.#options, baseUrl: this.baseUrl, apiKey });
  }

  // ---- auth (no credential) ----

  signup(input: { email: string; password: string }, opts: CallOptions = {}): Promise<SignupResult> {
    return this.#json({ method: 'POST', path: '/v1/auth/signup', auth: 'none', body: input, signal: opts.signal });
  }

  login(input: { email: string; password: string }, opts: CallOptions = {}): Promise<SessionToken> {
    return this.#json({ method: 'POST', path: '/v1/auth/login', auth: 'none', body: input, signal: opts.signal });
  }

  // ---- API keys (dashboard session token) ----

  /** A new key, shown this once; `scopes` limits what it may do (every scope when omitted). */
  createApiKey(input: { name?: string; scopes?: Scope[] } = {}, opts: CallOptions = {}): Promise<CreatedApiKey> {
    return this.#json({ method: 'POST', path: '/v1/api-keys', auth: 'token', body: input, signal: opts.signal });
  }

  async listApiKeys(opts: CallOptions = {}): Promise<ApiKeySummary[]> {
    return (await this.#json<ListResponse<ApiKeySummary>>({ method: 'GET', path: '/v1/api-keys', auth: 'token', signal: opts.signal })).data;
  }

  async revokeApiKey(keyId: string, opts: CallOptions = {}): Promise<void> {
    await this.#json({ method: 'DELETE', path: `/v1/api-keys/${seg(keyId)}`, auth: 'token', signal: opts.signal });
  }

  // ---- account (API key) ----

  account(opts: CallOptions = {}): Promise<Account> {
    return this.#json({ method: 'GET', path: '/v1/account', auth: 'apiKey', signal: opts.signal });
  }

  // ---- sandboxes ----

  createSandbox(input: CreateSandboxInput = {}, opts: CallOptions = {}): Promise<Sandbox> {
    const { wait, idempotencyKey, ...body } = input;
    return this.#json({
      method: 'POST',
      path: '/v1/sandboxes',
      auth: 'apiKey',
      query: { wait },
      body,
      headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {},
      signal: opts.signal,
    });
  }

  /** The first page of the account's sandboxes, newest first (see sandboxPage and sandboxes for more). */
  async listSandboxes(state: SandboxListState = 'active', opts: CallOptions & { limit?: number } = {}): Promise<Sandbox[]> {
    return (await this.sandboxPage(state, opts)).data;
  }

  /** One page, newest first; pass its `next` as `after` for the following one (null: the last). */
  sandboxPage(state: SandboxListState = 'active', opts: CallOptions & { limit?: number; after?: string } = {}): Promise<SandboxPage> {
    const query = { state, limit: opts.limit, after: opts.after };
    return this.#json<SandboxPage>({ method: 'GET', path: '/v1/sandboxes', auth: 'apiKey', query, signal: opts.signal });
  }

  /** Every sandbox of the account, newest first, fetched a page at a time as the loop asks. */
  async *sandboxes(state: SandboxListState = 'active', opts: CallOptions & { pageSize?: number } = {}): AsyncGenerator<Sandbox, void, undefined> {
    let after: string | undefined;
    do {
      const page = await this.sandboxPage(state, { limit: opts.pageSize, after, signal: opts.signal });
      yield* page.data;
      after = page.next ?? undefined;
    } while (after);
  }

  getSandbox(id: string, opts: CallOptions = {}): Promise<Sandbox> {
    return this.#json({ method: 'GET', path: `/v1/sandboxes/${seg(id)}`, auth: 'apiKey', signal: opts.signal });
  }

  /** Destroys a sandbox; by default answers once destroyed, with wait: false at once (terminating). */
  destroySandbox(id: string, opts: CallOptions & { wait?: boolean } = {}): Promise<Sandbox> {
    return this.#json({ method: 'DELETE', path: `/v1/sandboxes/${seg(id)}`, auth: 'apiKey', query: { wait: opts.wait }, signal: opts.signal });
  }

  /**
   * Ends the sandbox `timeoutSeconds` from now, earlier or later than before, never past its
   * createdAt + the session cap (a PaddockApiError `timeout_past_cap` says the latest expiresAt).
   * Answers the sandbox with its new expiresAt.
   */
  setSandboxTimeout(id: string, timeoutSeconds: number, opts: CallOptions = {}): Promise<Sandbox> {
    return this.#json({ method: 'POST', path: `/v1/sandboxes/${seg(id)}/timeout`, auth: 'apiKey', body: { timeoutSeconds }, signal: opts.signal });
  }

  /**
   * Changes the running sandbox's egress policy: connections it opens from now on follow it. A
   * policy other than the deployment's default needs network:write (`insufficient_scope`), and none
   * may pass the deployment's maximum (`egress_not_permitted`). Answers the sandbox with its network.
   */
  setSandboxNetwork(id: string, policy: NetworkPolicy, opts: CallOptions = {}): Promise<Sandbox> {
    return this.#json({ method: 'PATCH', path: `/v1/sandboxes/${seg(id)}/network`, auth: 'apiKey', body: policy, signal: opts.signal });
  }

  // ---- exec ----

  /** Runs a command and answers when it ends, with its whole output. */
  exec(id: string, body: ExecInput, opts: CallOptions = {}): Promise<ExecResult> {
    return this.#json({ method: 'POST', path: `/v1/sandboxes/${seg(id)}/exec`, auth: 'apiKey', body, signal: opts.signal });
  }

  /**
   * Runs a command and yields its output as it is produced: stdout and stderr events, then one
   * exit event (or an error event, when the server failed after the stream started). Aborting the
   * signal, or leaving the loop early, closes the connection and the server kills the command.
   */
  async *execStream(id: string, body: ExecInput, opts: CallOptions = {}): AsyncGenerator<ExecStreamEvent, void, undefined> {
    const res = await this.#send({
      method: 'POST',
      path: `/v1/sandboxes/${seg(id)}/exec`,
      auth: 'apiKey',
      body,
      accept: NDJSON,
      signal: opts.signal,
    });
    if (!res.body) throw new PaddockConnectionError(this.baseUrl, 'The exec stream answered no body.');
    let ended = false;
    try {
      for await (const line of ndjsonLines(res.body, opts.signal)) {
        const event = JSON.parse(line) as ExecStreamEvent;
        if (event.type === 'exit' || event.type === 'error') ended = true;
        yield event;
      }
    } catch (err) {
      if (err instanceof SyntaxError) throw new PaddockConnectionError(this.baseUrl, 'The exec stream sent a line that is not JSON.', { cause: err });
      if (err instanceof PaddockError || opts.signal?.aborted) throw err;
      throw new PaddockConnectionError(this.baseUrl, `The exec stream broke: ${describeCause(err)}.`, { cause: err });
    }
    if (!ended) throw new PaddockConnectionError(this.baseUrl, 'The exec stream ended before the command did.');
  }

  // ---- background processes ----

  /** Starts a command as a background process and answers at once; it runs until it ends or is stopped. */
  startProcess(id: string, body: Omit<ExecInput, 'stdin' | 'timeoutSeconds'>, opts: CallOptions = {}): Promise<StartedProcess> {
    return this.#json({ method: 'POST', path: `/v1/sandboxes/${seg(id)}/exec`, auth: 'apiKey', body: { ...body, background: true }, signal: opts.signal });
  }

  /** The sandbox's background processes: those running and the most recent ones that ended. */
  async listProcesses(id: string, opts: CallOptions = {}): Promise<ProcessInfo[]> {
    const spec = { method: 'GET', path: `/v1/sandboxes/${seg(id)}/processes`, auth: 'apiKey', signal: opts.signal } as const;
    return (await this.#json<ListResponse<ProcessInfo>>(spec)).data;
  }

  /**
   * A process's kept output, then an exit event once it has ended. With follow, the stream stays
   * open until the process ends; without, it ends after what is kept now (no exit event while the
   * process runs). Leaving the loop early closes the connection; the process runs on.
   */
  async *processOutput(id: string, procId: string, opts: CallOptions & { follow?: boolean } = {}): AsyncGenerator<ProcessOutputEvent, void, undefined> {
    const res = await this.#send({
      method: 'GET',
      path: `/v1/sandboxes/${seg(id)}/processes/${seg(procId)}/output`,
      auth: 'apiKey',
      query: { follow: opts.follow ? 'true' : undefined },
      accept: NDJSON,
      signal: opts.signal,
    });
    if (!res.body) throw new PaddockConnectionError(this.baseUrl, 'The output stream answered no body.');
    try {
      for await (const line of ndjsonLines(res.body, opts.signal)) yield JSON.parse(line) as ProcessOutputEvent;
    } catch (err) {
      if (err instanceof SyntaxError) throw new PaddockConnectionError(this.baseUrl, 'The output stream sent a line that is not JSON.', { cause: err });
      if (err instanceof PaddockError || opts.signal?.aborted) throw err;
      throw new PaddockConnectionError(this.baseUrl, `The output stream broke: ${describeCause(err)}.`, { cause: err });
    }
  }

  /** Writes to a process's standard input (it stays open for the next write). */
  async writeProcessStdin(id: string, procId: string, data: string, opts: CallOptions = {}): Promise<void> {
    const spec = { method: 'POST', path: `/v1/sandboxes/${seg(id)}/processes/${seg(procId)}/stdin`, auth: 'apiKey', body: { data }, signal: opts.signal } as const;
    await this.#json(spec);
  }

  /** Signals a process's process group: TERM (default) or KILL. A process that has ended is left as it is. */
  async stopProcess(id: string, procId: string, signal: ProcessSignal = 'TERM', opts: CallOptions = {}): Promise<void> {
    const spec = { method: 'DELETE', path: `/v1/sandboxes/${seg(id)}/processes/${seg(procId)}`, auth: 'apiKey', query: { signal }, signal: opts.signal } as const;
    await this.#json(spec);
  }

  // ---- files ----

  viewFile(id: string, input: ViewFileInput, opts: CallOptions = {}): Promise<FileView> {
    return this.#json({ method: 'GET', path: `/v1/sandboxes/${seg(id)}/files`, auth: 'apiKey', query: { ...input }, signal: opts.signal });
  }

  createFile(id: string, input: CreateFileInput, opts: CallOptions = {}): Promise<WrittenFile> {
    const { path, overwrite, ...body } = input;
    return this.#json({ method: 'PUT', path: `/v1/sandboxes/${seg(id)}/files`, auth: 'apiKey', query: { path, overwrite }, body, signal: opts.signal });
  }

  editFile(id: string, input: EditFileInput, opts: CallOptions = {}): Promise<EditResult> {
    const { path, ...body } = input;
    return this.#json({ method: 'PATCH', path: `/v1/sandboxes/${seg(id)}/files`, auth: 'apiKey', query: { path }, body, signal: opts.signal });
  }

  listDir(id: string, path?: string, opts: CallOptions = {}): Promise<Listing> {
    return this.#json({ method: 'GET', path: `/v1/sandboxes/${seg(id)}/files/ls`, auth: 'apiKey', query: { path }, signal: opts.signal });
  }

  glob(id: string, input: GlobInput, opts: CallOptions = {}): Promise<GlobResult> {
    return this.#json({ method: 'GET', path: `/v1/sandboxes/${seg(id)}/files/glob`, auth: 'apiKey', query: { ...input }, signal: opts.signal });
  }

  grep(id: string, input: GrepInput, opts: CallOptions = {}): Promise<GrepResult> {
    return this.#json({ method: 'GET', path: `/v1/sandboxes/${seg(id)}/files/grep`, auth: 'apiKey', query: { ...input }, signal: opts.signal });
  }

  /**
   * Downloads a directory (or a file) as a tar archive, or tar.gz, yielding its bytes as they
   * come. Leaving the loop early, or aborting, closes the connection and stops the server's tar.
   * An archive the server could not finish throws, never ends as if whole.
   */
  async *downloadArchive(id: string, input: DownloadArchiveInput = {}, opts: CallOptions = {}): AsyncGenerator<Uint8Array, void, undefined> {
    const res = await this.#send({
      method: 'GET',
      path: `/v1/sandboxes/${seg(id)}/files/archive`,
      auth: 'apiKey',
      query: { path: input.path },
      accept: input.gzip ? 'application/gzip' : 'application/x-tar',
      signal: opts.signal,
    });
    if (!res.body) throw new PaddockConnectionError(this.baseUrl, 'The archive download answered no body.');
    // Left early, the connection closes (chunksOf), and the server stops its tar.
    try {
      yield* chunksOf(res.body, opts.signal);
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      throw new PaddockConnectionError(this.baseUrl, `The archive download broke off: ${describeCause(err)}.`, { cause: err });
    }
  }

  /** Extracts a tar (or tar.gz) archive under a directory of the sandbox, sending it as it is read. */
  uploadArchive(id: string, input: UploadArchiveInput, opts: CallOptions = {}): Promise<ExtractedArchive> {
    return this.#json({
      method: 'PUT',
      path: `/v1/sandboxes/${seg(id)}/files/archive`,
      auth: 'apiKey',
      query: { path: input.path },
      raw: { bytes: input.archive, contentType: input.gzip ? 'application/gzip' : 'application/x-tar' },
      signal: opts.signal,
    });
  }

  /** Removes a file, a symlink (never what it points at), or a directory: an empty one, or with everything in it when `recursive`. */
  async removePath(id: string, path: string, opts: CallOptions & { recursive?: boolean } = {}): Promise<void> {
    const query = { path, recursive: opts.recursive };
    await this.#json({ method: 'DELETE', path: `/v1/sandboxes/${seg(id)}/files`, auth: 'apiKey', query, signal: opts.signal });
  }

  /** Renames `from` to `to` (the new name itself), making its parent directories. */
  movePath(id: string, input: MovePathInput, opts: CallOptions = {}): Promise<{ path: string }> {
    return this.#json({ method: 'POST', path: `/v1/sandboxes/${seg(id)}/files/move`, auth: 'apiKey', body: input, signal: opts.signal });
  }

  /** Makes a directory and its parents; one that exists already is success. */
  makeDir(id: string, path: string, opts: CallOptions = {}): Promise<{ path: string }> {
    return this.#json({ method: 'POST', path: `/v1/sandboxes/${seg(id)}/files/mkdir`, auth: 'apiKey', query: { path }, signal: opts.signal });
  }

  /** What is at `path`; a final symlink is described (with its target), not followed. */
  statPath(id: string, path: string, opts: CallOptions = {}): Promise<FileStat> {
    return this.#json({ method: 'GET', path: `/v1/sandboxes/${seg(id)}/files/stat`, auth: 'apiKey', query: { path }, signal: opts.signal });
  }

  /**
   * A file's bytes as they come, or those from `start` to `end` (inclusive; either may be left
   * out). Cancelling the stream, or aborting, closes the connection and stops the server's read.
   * A read the server could not finish errors the stream, never ends it as if whole.
   */
  async readRaw(id: string, path: string, opts: CallOptions & { start?: number; end?: number } = {}): Promise<ReadableStream<Uint8Array>> {
    const ranged = opts.start !== undefined || opts.end !== undefined;
    // No start: the last `end + 1` bytes would be a suffix range; from 0 is what is meant.
    const range = ranged ? `bytes=${opts.start ?? 0}-${opts.end ?? ''}` : undefined;
    const res = await this.#send({
      method: 'GET',
      path: `/v1/sandboxes/${seg(id)}/files/raw`,
      auth: 'apiKey',
      query: { path },
      accept: 'application/octet-stream',
      ...(range ? { headers: { Range: range } } : {}),
      signal: opts.signal,
    });
    if (!res.body) throw new PaddockConnectionError(this.baseUrl, 'The file download answered no body.');
    const chunks = chunksOf(res.body, opts.signal)[Symbol.asyncIterator]();
    const baseUrl = this.baseUrl;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await chunks.next();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        } catch (err) {
          controller.error(opts.signal?.aborted ? err : new PaddockConnectionError(baseUrl, `The file download broke off: ${describeCause(err)}.`, { cause: err }));
        }
      },
      async cancel() {
        await chunks.return?.(undefined);
      },
    });
  }

  /**
   * Writes `body` to `path` as it is read (a stream is never held whole), creating its parent
   * directories; the file is replaced only once the body is whole.
   */
  writeRaw(id: string, path: string, body: RawFileBody, opts: CallOptions & { overwrite?: boolean } = {}): Promise<WrittenFile> {
    const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body instanceof ReadableStream ? iterate(body) : body;
    return this.#json({
      method: 'PUT',
      path: `/v1/sandboxes/${seg(id)}/files/raw`,
      auth: 'apiKey',
      query: { path, overwrite: opts.overwrite },
      raw: { bytes, contentType: 'application/octet-stream' },
      signal: opts.signal,
    });
  }

  // ---- previews ----

  /**
   * Makes a port of the sandbox reachable at a URL of its own and answers a new token for it; a
   * port already previewed keeps its preview (`public` may be changed) and gets a new token.
   */
  createPreview(id: string, input: CreatePreviewInput, opts: CallOptions = {}): Promise<CreatedPreview> {
    return this.#json({ method: 'POST', path: `/v1/sandboxes/${seg(id)}/previews`, auth: 'apiKey', body: input, signal: opts.signal });
  }

  /** The sandbox's previewed ports (never a token). */
  async listPreviews(id: string, opts: CallOptions = {}): Promise<PreviewSummary[]> {
    const spec = { method: 'GET', path: `/v1/sandboxes/${seg(id)}/previews`, auth: 'apiKey', signal: opts.signal } as const;
    return (await this.#json<ListResponse<PreviewSummary>>(spec)).data;
  }

  /** Removes the port's preview: every token of it stops at once, and connections open through it are closed. */
  async deletePreview(id: string, port: number, opts: CallOptions = {}): Promise<void> {
    await this.#json({ method: 'DELETE', path: `/v1/sandboxes/${seg(id)}/previews/${seg(String(port))}`, auth: 'apiKey', signal: opts.signal });
  }

  // ---- snapshots ----

  /** Copies the running sandbox's /workspace into a snapshot; answers it ready (with wait: false, at once and pending). */
  createSnapshot(id: string, input: { name?: string } = {}, opts: CallOptions & { wait?: boolean } = {}): Promise<Snapshot> {
    return this.#json({ method: 'POST', path: `/v1/sandboxes/${seg(id)}/snapshots`, auth: 'apiKey', query: { wait: opts.wait }, body: input, signal: opts.signal });
  }

  /** A page of the account's snapshots, newest first, as a list (see snapshotPage for its `next`, snapshots for every page). */
  async listSnapshots(opts: CallOptions & { limit?: number; after?: string } = {}): Promise<Snapshot[]> {
    return (await this.snapshotPage(opts)).data;
  }

  /** One page of the account's snapshots, newest first; pass its `next` as `after` for the following one (null: the last). */
  snapshotPage(opts: CallOptions & { limit?: number; after?: string } = {}): Promise<SnapshotPage> {
    return this.#json({ method: 'GET', path: '/v1/snapshots', auth: 'apiKey', query: { limit: opts.limit, after: opts.after }, signal: opts.signal });
  }

  /** Every snapshot of the account, newest first, fetched a page at a time as the loop asks. */
  async *snapshots(opts: CallOptions & { pageSize?: number } = {}): AsyncGenerator<Snapshot, void, undefined> {
    let after: string | undefined;
    do {
      const page = await this.snapshotPage({ limit: opts.pageSize, after, signal: opts.signal });
      yield* page.data;
      after = page.next ?? undefined;
    } while (after);
  }

  getSnapshot(snapshotId: string, opts: CallOptions = {}): Promise<Snapshot> {
    return this.#json({ method: 'GET', path: `/v1/snapshots/${seg(snapshotId)}`, auth: 'apiKey', signal: opts.signal });
  }

  /** Deletes a snapshot; sandboxes started from it keep their workspaces. */
  async deleteSnapshot(snapshotId: string, opts: CallOptions = {}): Promise<void> {
    await this.#json({ method: 'DELETE', path: `/v1/snapshots/${seg(snapshotId)}`, auth: 'apiKey', signal: opts.signal });
  }

  // ---- allowlist ----

  getAllowlist(opts: CallOptions = {}): Promise<Allowlist> {
    return this.#json({ method: 'GET', path: '/v1/allowlist', auth: 'apiKey', signal: opts.signal });
  }

  setAllowlist(commands: string[], opts: CallOptions = {}): Promise<Allowlist> {
    return this.#json({ method: 'PUT', path: '/v1/allowlist', auth: 'apiKey', body: { commands }, signal: opts.signal });
  }

  async clearAllowlist(opts: CallOptions = {}): Promise<void> {
    await this.#json({ method: 'DELETE', path: '/v1/allowlist', auth: 'apiKey', signal: opts.signal });
  }

  // ---- secrets ----

  createSecret(input: CreateSecretInput, opts: CallOptions = {}): Promise<Secret> {
    return this.#json({ method: 'POST', path: '/v1/secrets', auth: 'apiKey', body: input, signal: opts.signal });
  }

  async listSecrets(sandboxId?: string, opts: CallOptions = {}): Promise<Secret[]> {
    const spec = { method: 'GET', path: '/v1/secrets', auth: 'apiKey', query: { sandboxId }, signal: opts.signal } as const;
    return (await this.#json<ListResponse<Secret>>(spec)).data;
  }

  async deleteSecret(name: string, sandboxId?: string, opts: CallOptions = {}): Promise<void> {
    await this.#json({ method: 'DELETE', path: `/v1/secrets/${seg(name)}`, auth: 'apiKey', query: { sandboxId }, signal: opts.signal });
  }

  // ---- tool-server configuration ----

  /** The tool-server (MCP) configuration for client `target` (e.g. claude-code), optionally for one scope. */
  mcpConfig(target: string, opts: CallOptions & { scope?: string; transport?: 'stdio' | 'http' } = {}): Promise<McpConfig> {
    const query = { target, scope: opts.scope, transport: opts.transport };
    return this.#json({ method: 'GET', path: '/v1/mcp/config', auth: 'apiKey', query, signal: opts.signal });
  }

  // ---- events and webhooks ----

  /** The account's events, oldest first, after `after` (an event id) when given. */
  async listEvents(opts: CallOptions & { after?: string; limit?: number } = {}): Promise<PaddockEvent[]> {
    const query = { after: opts.after, limit: opts.limit };
    return (await this.#json<ListResponse<PaddockEvent>>({ method: 'GET', path: '/v1/events', auth: 'apiKey', query, signal: opts.signal })).data;
  }

  /**
   * Opens the sandbox's terminal: a single-use ticket first (so the key never travels in a URL,
   * and browsers, which cannot set headers on a WebSocket, work too), then the WebSocket.
   */
  async openTerminal(id: string, options: TerminalOptions, opts: CallOptions = {}): Promise<Terminal> {
    const { ticket } = await this.#json<{ ticket: string }>({ method: 'POST', path: `/v1/sandboxes/${seg(id)}/terminal/tickets`, auth: 'apiKey', signal: opts.signal });
    const url = new URL(`/v1/sandboxes/${seg(id)}/terminal`, this.baseUrl);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    if (options.cols) url.searchParams.set('cols', String(options.cols));
    if (options.rows) url.searchParams.set('rows', String(options.rows));
    for (const word of options.command ?? []) url.searchParams.append('command', word);
    url.searchParams.set('ticket', ticket);
    return connectTerminal(
      url.toString(),
      options,
      (status, headers, body) => apiErrorOf(new Response(body, { status, headers })),
      (message) => new PaddockConnectionError(this.baseUrl, message),
    );
  }

  /**
   * The account's events as they happen (Server-Sent Events), after `after` when given, else from
   * now. Ends when the server closes the stream; resume with the last id seen.
   */
  async *streamEvents(opts: CallOptions & { after?: string } = {}): AsyncGenerator<PaddockEvent, void, undefined> {
    const res = await this.#send({
      method: 'GET',
      path: '/v1/events',
      auth: 'apiKey',
      accept: 'text/event-stream',
      headers: opts.after ? { 'Last-Event-ID': opts.after } : {},
      signal: opts.signal,
    });
    if (!res.body) throw new PaddockConnectionError(this.baseUrl, 'The event stream answered no body.');
    try {
      for await (const data of sseData(res.body, opts.signal)) yield JSON.parse(data) as PaddockEvent;
    } catch (err) {
      if (err instanceof PaddockError || opts.signal?.aborted) throw err;
      throw new PaddockConnectionError(this.baseUrl, `The event stream broke: ${describeCause(err)}.`, { cause: err });
    }
  }

  createWebhook(input: CreateWebhookInput, opts: CallOptions = {}): Promise<CreatedWebhook> {
    return this.#json({ method: 'POST', path: '/v1/webhooks', auth: 'apiKey', body: input, signal: opts.signal });
  }

  async listWebhooks(opts: CallOptions = {}): Promise<Webhook[]> {
    return (await this.#json<ListResponse<Webhook>>({ method: 'GET', path: '/v1/webhooks', auth: 'apiKey', signal: opts.signal })).data;
  }

  async deleteWebhook(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#json({ method: 'DELETE', path: `/v1/webhooks/${seg(id)}`, auth: 'apiKey', signal: opts.signal });
  }

  /** Sends a webhook.test event to the endpoint; answers the event. */
  testWebhook(id: string, opts: CallOptions = {}): Promise<PaddockEvent> {
    return this.#json({ method: 'POST', path: `/v1/webhooks/${seg(id)}/test`, auth: 'apiKey', signal: opts.signal });
  }

  /** A new signing secret, shown this once; the former one also signs until previousSecretExpiresAt. */
  rotateWebhookSecret(id: string, opts: CallOptions = {}): Promise<RotatedWebhookSecret> {
    return this.#json({ method: 'POST', path: `/v1/webhooks/${seg(id)}/secret`, auth: 'apiKey', signal: opts.signal });
  }

  async listDeliveries(id: string, opts: CallOptions & { limit?: number } = {}): Promise<DeliveryAttempt[]> {
    const query = { limit: opts.limit };
    return (await this.#json<ListResponse<DeliveryAttempt>>({ method: 'GET', path: `/v1/webhooks/${seg(id)}/deliveries`, auth: 'apiKey', query, signal: opts.signal })).data;
  }

  // ---- plumbing ----

  async #json<T>(spec: RequestSpec): Promise<T> {
    const res = await this.#send(spec);
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    if (text === '') return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new PaddockConnectionError(this.baseUrl, `${spec.method} ${spec.path} answered ${res.status} with a body that is not JSON.`, { cause: err });
    }
  }

  /** Sends one request; answers the response when it is a success, else throws. */
  async #send(spec: RequestSpec): Promise<Response> {
    const url = new URL(this.baseUrl + spec.path);
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {
      Accept: spec.accept ?? 'application/json',
      'User-Agent': this.#userAgent,
      ...spec.headers,
    };
    const credential = spec.auth === 'apiKey' ? this.#apiKey : spec.auth === 'token' ? this.#token : undefined;
    if (spec.auth !== 'none' && !credential) {
      throw new PaddockError(
        spec.auth === 'apiKey'
          ? `${spec.method} ${spec.path} needs an API key, and the client has none.`
          : `${spec.method} ${spec.path} needs a dashboard session token (from login), and the client has none.`,
      );
    }
    if (credential) headers.Authorization = `Bearer ${credential}`;
    let body: string | Uint8Array | ReadableStream<Uint8Array> | undefined;
    if (spec.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(spec.body);
    } else if (spec.raw) {
      headers['Content-Type'] = spec.raw.contentType;
      body = spec.raw.bytes instanceof Uint8Array ? spec.raw.bytes : streamOf(spec.raw.bytes);
    }
    const replayable = !(body instanceof ReadableStream);
    const idempotent = spec.method === 'GET' || spec.method === 'PUT' || spec.method === 'DELETE' || 'Idempotency-Key' in headers;
    const retries = idempotent && replayable ? (this.#options.retries ?? 2) : 0;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        // A streamed body goes out as it is read (half duplex: the answer comes once it is sent, or refused).
        const init = { method: spec.method, headers, body, signal: spec.signal, redirect: 'error' as const, duplex: 'half' };
        res = await this.#fetch(url, init as RequestInit);
      } catch (err) {
        if (spec.signal?.aborted) throw err;
        // No answer (not reached, or a kept-alive connection the server closed as it was sent):
        // an idempotent request is safe to send again, after a short pause; a plain POST is not.
        if (attempt < retries) {
          await pause(250 * 2 ** attempt, spec.signal);
          continue;
        }
        throw new PaddockConnectionError(this.baseUrl, `Could not reach ${this.baseUrl}: ${describeCause(err)}.`, { cause: err });
      }
      if (res.ok) return res;
      const error = await apiErrorOf(res);
      const wait = error.retryAfter;
      const retryable = (res.status === 429 || res.status === 503) && wait !== undefined && wait <= (this.#options.maxRetryWaitSeconds ?? 30);
      if (!retryable || attempt >= retries) throw error;
      await pause(wait * 1000, spec.signal);
    }
  }
}

/** Waits, unless the signal aborts first (then throws its reason, as fetch would). */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A pull stream over the chunks: each is read from the source only when fetch asks for more. */
function streamOf(chunks: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

/** A ReadableStream's chunks (Node 20's streams are async-iterable, a browser's may not be). */
async function* iterate(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) return;
      yield next.value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** A path segment, escaped. */
function seg(value: string): string {
  return encodeURIComponent(value);
}

async function apiErrorOf(res: Response): Promise<PaddockApiError> {
  const retryAfterHeader = res.headers.get('retry-after');
  const retryAfter = retryAfterHeader !== null && /^\d+$/.test(retryAfterHeader) ? Number(retryAfterHeader) : undefined;
  const requestId = res.headers.get('x-request-id') ?? undefined;
  const text = await res.text().catch(() => '');
  let problem: ProblemDocument | undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object' && typeof (parsed as ProblemDocument).code === 'string') problem = parsed as ProblemDocument;
  } catch {
    // not a problem document: described below from the status
  }
  if (problem) {
    return new PaddockApiError({
      status: res.status,
      code: problem.code,
      detail: typeof problem.detail === 'string' ? problem.detail : problem.title,
      title: problem.title,
      requestId: typeof problem.requestId === 'string' ? problem.requestId : requestId,
      retryAfter,
      problem,
    });
  }
  return new PaddockApiError({
    status: res.status,
    code: 'unexpected_response',
    detail: `The server answered ${res.status} ${res.statusText || ''} without a problem document.`.replace(/ +without/, ' without'),
    requestId,
    retryAfter,
  });
}

/**
 * A response body's chunks, ended by the caller's signal as well as by the body. fetch's own
 * abort does not always reach a body being read: on Node 20 a stream read for seconds went on
 * after its signal fired (undici holds its abort listener weakly, and the request it belongs to
 * can be collected), so Esc in the TUI did not stop a command. The reader is cancelled here,
 * which closes the connection: the server then ends what it streams.
 */
async function* chunksOf(body: ReadableStream<Uint8Array>, signal: AbortSignal | undefined): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  const cancel = () => void reader.cancel(signal?.reason).catch(() => undefined);
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      signal?.throwIfAborted();
      const next = await reader.read();
      signal?.throwIfAborted();
      if (next.done) return;
      yield next.value;
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
    // Left early (or aborted): the connection closes.
    void reader.cancel().catch(() => undefined);
  }
}

/** The lines of an NDJSON body, without their newlines; blank lines skipped. */
async function* ndjsonLines(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of chunksOf(body, signal)) {
    buffered += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line) yield line;
    }
  }
  buffered += decoder.decode();
  if (buffered.trim()) yield buffered.trim();
}

/** The data of each Server-Sent Events frame that has some (comments and retry lines skipped). */
async function* sseData(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of chunksOf(body, signal)) {
    buffered += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const frame = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = frame
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''));
      if (data.length) yield data.join('\n');
    }
  }
}

function describeCause(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  if (cause?.code) return cause.code;
  if (cause?.message) return cause.message;
  return err instanceof Error ? err.message : String(err);
}
