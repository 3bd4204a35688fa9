import { checkBaseUrl } from './base-url.ts';
import { PaddockApiError, PaddockConnectionError, PaddockError } from './errors.ts';
import type {
  Account,
  Allowlist,
  ApiKeySummary,
  CreateFileInput,
  CreateSandboxInput,
  CreateSecretInput,
  CreatedApiKey,
  EditFileInput,
  EditResult,
  ExecInput,
  ExecResult,
  ExecStreamEvent,
  FileView,
  GlobInput,
  GlobResult,
  GrepInput,
  GrepResult,
  Listing,
  ListResponse,
  McpConfig,
  ProblemDocument,
  Sandbox,
  SandboxListState,
  Secret,
  SessionToken,
  SignupResult,
  ViewFileInput,
  WrittenFile,
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
  headers?: Record<string, string>;
  accept?: string;
  signal?: AbortSignal;
}

const NDJSON = 'application/x-ndjson';

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

  constructor(options: PaddockClientOptions) {
    this.baseUrl = checkBaseUrl(options.baseUrl);
    this.#apiKey = options.apiKey;
    this.#token = options.token;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#userAgent = options.userAgent ?? 'paddock-client/0.1.0';
  }

  /** The same client with a dashboard session token, for the /v1/api-keys routes. */
  withToken(token: string): PaddockClient {
    return new PaddockClient({ baseUrl: this.baseUrl, apiKey: this.#apiKey, token, fetch: this.#fetch, userAgent: this.#userAgent });
  }

  /** The same client with an API key. */
  withApiKey(apiKey: string): PaddockClient {
    return new PaddockClient({ baseUrl: this.baseUrl, apiKey, token: this.#token, fetch: this.#fetch, userAgent: this.#userAgent });
  }

  // ---- auth (no credential) ----

  signup(input: { email: string; password: string }): Promise<SignupResult> {
    return this.#json({ method: 'POST', path: '/v1/auth/signup', auth: 'none', body: input });
  }

  login(input: { email: string; password: string }): Promise<SessionToken> {
    return this.#json({ method: 'POST', path: '/v1/auth/login', auth: 'none', body: input });
  }

  // ---- API keys (dashboard session token) ----

  createApiKey(input: { name?: string } = {}): Promise<CreatedApiKey> {
    return this.#json({ method: 'POST', path: '/v1/api-keys', auth: 'token', body: input });
  }

  async listApiKeys(): Promise<ApiKeySummary[]> {
    return (await this.#json<ListResponse<ApiKeySummary>>({ method: 'GET', path: '/v1/api-keys', auth: 'token' })).data;
  }

  async revokeApiKey(keyId: string): Promise<void> {
    await this.#json({ method: 'DELETE', path: `/v1/api-keys/${seg(keyId)}`, auth: 'token' });
  }

  // ---- account (API key) ----

  account(): Promise<Account> {
    return this.#json({ method: 'GET', path: '/v1/account', auth: 'apiKey' });
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

  async listSandboxes(state: SandboxListState = 'active', opts: CallOptions & { limit?: number } = {}): Promise<Sandbox[]> {
    const query = { state, limit: opts.limit };
    return (await this.#json<ListResponse<Sandbox>>({ method: 'GET', path: '/v1/sandboxes', auth: 'apiKey', query, signal: opts.signal })).data;
  }

  getSandbox(id: string, opts: CallOptions = {}): Promise<Sandbox> {
    return this.#json({ method: 'GET', path: `/v1/sandboxes/${seg(id)}`, auth: 'apiKey', signal: opts.signal });
  }

  /** Destroys a sandbox; by default answers once destroyed, with wait: false at once (terminating). */
  destroySandbox(id: string, opts: CallOptions & { wait?: boolean } = {}): Promise<Sandbox> {
    return this.#json({ method: 'DELETE', path: `/v1/sandboxes/${seg(id)}`, auth: 'apiKey', query: { wait: opts.wait }, signal: opts.signal });
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
      for await (const line of ndjsonLines(res.body)) {
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

  // ---- allowlist ----

  getAllowlist(): Promise<Allowlist> {
    return this.#json({ method: 'GET', path: '/v1/allowlist', auth: 'apiKey' });
  }

  setAllowlist(commands: string[]): Promise<Allowlist> {
    return this.#json({ method: 'PUT', path: '/v1/allowlist', auth: 'apiKey', body: { commands } });
  }

  async clearAllowlist(): Promise<void> {
    await this.#json({ method: 'DELETE', path: '/v1/allowlist', auth: 'apiKey' });
  }

  // ---- secrets ----

  createSecret(input: CreateSecretInput): Promise<Secret> {
    return this.#json({ method: 'POST', path: '/v1/secrets', auth: 'apiKey', body: input });
  }

  async listSecrets(sandboxId?: string): Promise<Secret[]> {
    return (await this.#json<ListResponse<Secret>>({ method: 'GET', path: '/v1/secrets', auth: 'apiKey', query: { sandboxId } })).data;
  }

  async deleteSecret(name: string, sandboxId?: string): Promise<void> {
    await this.#json({ method: 'DELETE', path: `/v1/secrets/${seg(name)}`, auth: 'apiKey', query: { sandboxId } });
  }

  // ---- tool-server configuration ----

  /** The tool-server (MCP) configuration for client `target` (e.g. claude-code), optionally for one scope. */
  mcpConfig(target: string, opts: { scope?: string } = {}): Promise<McpConfig> {
    return this.#json({ method: 'GET', path: '/v1/mcp/config', auth: 'apiKey', query: { target, scope: opts.scope } });
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
    let body: string | undefined;
    if (spec.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(spec.body);
    }
    let res: Response;
    try {
      res = await this.#fetch(url, { method: spec.method, headers, body, signal: spec.signal, redirect: 'error' });
    } catch (err) {
      if (spec.signal?.aborted) throw err;
      throw new PaddockConnectionError(this.baseUrl, `Could not reach ${this.baseUrl}: ${describeCause(err)}.`, { cause: err });
    }
    if (res.ok) return res;
    throw await apiErrorOf(res);
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

/** The lines of an NDJSON body, without their newlines; blank lines skipped. */
async function* ndjsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
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

function describeCause(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  if (cause?.code) return cause.code;
  if (cause?.message) return cause.message;
  return err instanceof Error ? err.message : String(err);
}
