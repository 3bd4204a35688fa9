import type { CallOptions, PaddockClient } from './client.ts';
import { PaddockConnectionError, PaddockError } from './errors.ts';
import { localHttp, type LocalClientRequest, type LocalIncomingMessage, type LocalLookup } from './local-http.ts';
import type { CreatedPreview, PreviewSummary } from './types.ts';

/** The header a program sends a preview's token in (docs/api.md, previews). */
export const PREVIEW_TOKEN_HEADER = 'X-Paddock-Preview-Token';

/** Options of `sbx.previews.create`. */
export interface PreviewCreateOpts extends CallOptions {
  /** Open to everyone, no token needed. A new preview is private; an existing one keeps its setting unless this is given. */
  public?: boolean;
  /** The new token's lifetime, in seconds (the API's default when left out). */
  expiresInSeconds?: number;
}

/** The ports of one sandbox reachable from outside at URLs of their own: `sbx.previews`. */
export class Previews {
  readonly #client: PaddockClient;
  readonly #sandboxId: string;

  /** @internal Made by Sandbox. */
  constructor(client: PaddockClient, sandboxId: string) {
    this.#client = client;
    this.#sandboxId = sandboxId;
  }

  /**
   * Makes `port` (one a program in the sandbox listens on, on loopback or on every address)
   * reachable at its preview URL, and answers it with a new token. A port already previewed keeps
   * its preview and gets a new token; earlier tokens stay valid until their own expiresAt.
   */
  async create(port: number, opts: PreviewCreateOpts = {}): Promise<Preview> {
    const input = { port, public: opts.public, expiresInSeconds: opts.expiresInSeconds };
    return new Preview(await this.#client.createPreview(this.#sandboxId, input, { signal: opts.signal }));
  }

  /** The sandbox's previewed ports, by port (never a token). */
  list(opts: CallOptions = {}): Promise<PreviewSummary[]> {
    return this.#client.listPreviews(this.#sandboxId, opts);
  }

  /** Removes the port's preview: every token of it stops at once, and connections open through it are closed. */
  remove(port: number, opts: CallOptions = {}): Promise<void> {
    return this.#client.deletePreview(this.#sandboxId, port, opts);
  }
}

/**
 * A previewed port with one of its tokens, as `sbx.previews.create` answers it (or made from a
 * PaddockClient's createPreview). `fetch` requests the program through it; a browser opens
 * `signedUrl` instead.
 */
export class Preview implements CreatedPreview {
  /** The sandbox's port. */
  readonly port: number;
  /** The preview's URL (its root): `<scheme>://<port>-<sandbox id without sbx_>.<preview domain>/`. */
  readonly url: string;
  /** Sent as X-Paddock-Preview-Token; opens this port of this sandbox only. */
  readonly token: string;
  /** The URL with the token, for a browser: traded for a cookie of that host. */
  readonly signedUrl: string;
  /** Whether everyone may reach it, without a token. */
  readonly public: boolean;
  /** When this token expires (the preview stays until it is removed or the sandbox ends). */
  readonly expiresAt: string;

  constructor(created: CreatedPreview) {
    this.port = created.port;
    this.url = created.url;
    this.token = created.token;
    this.signedUrl = created.signedUrl;
    this.public = created.public;
    this.expiresAt = created.expiresAt;
  }

  /**
   * Requests `path` (with its query) of the program through the preview, the token sent as
   * X-Paddock-Preview-Token, and answers the program's Response as it streams. A redirect is
   * answered, not followed, so that the token goes to the preview's host alone. On a host under
   * `.localhost` (a stack on this machine) the connection is made to the loopback address with
   * the preview's host in Host, as browsers do: Node's resolver does not map `*.localhost`. That
   * needs node:http (Node, Deno, Bun); other hosts go through the global fetch.
   */
  async fetch(path = '/', init: RequestInit = {}): Promise<Response> {
    const url = this.#target(path);
    const headers = new Headers(init.headers);
    headers.set(PREVIEW_TOKEN_HEADER, this.token);
    if (!isLocalhost(url.hostname)) {
      try {
        return await fetch(url, { ...init, headers, redirect: 'manual' });
      } catch (err) {
        if (init.signal?.aborted) throw err;
        throw new PaddockConnectionError(url.origin, `Could not reach ${url.origin}: ${describeCause(err)}.`, { cause: err });
      }
    }
    return fetchOnLoopback(url, init, headers);
  }

  /** The URL of `path` on the preview's own origin: a path can never name another host (the token would go there). */
  #target(path: string): URL {
    if (!path.startsWith('/')) throw new PaddockError(`A preview path starts with "/" (given ${JSON.stringify(path)}).`);
    const origin = new URL(this.url).origin;
    const url = new URL(origin + path);
    if (url.origin !== origin) throw new PaddockError(`The path ${JSON.stringify(path)} leaves the preview's origin.`);
    return url;
  }
}

/** `localhost` and the names under it, which browsers and curl resolve to loopback themselves (RFC 6761). */
function isLocalhost(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** Every name resolves to loopback: IPv4 first, then IPv6 (Node tries each in turn when it asks for all). */
const loopback: LocalLookup = (_hostname, options, callback) => {
  queueMicrotask(() => {
    if (options.all)
      callback(null, [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ]);
    else callback(null, '127.0.0.1', 4);
  });
};

/** Statuses whose response has no body (a Response made with one throws). */
const NULL_BODY = new Set([101, 204, 205, 304]);

/** Chunks a response holds before its reader asks for more: the connection is paused past it. */
const RESPONSE_HIGH_WATER = 64 * 1024;

async function fetchOnLoopback(url: URL, init: RequestInit, headers: Headers): Promise<Response> {
  let http;
  try {
    http = await localHttp(url.protocol);
  } catch (err) {
    throw new PaddockError(`Reaching ${url.host} on this machine needs node:http, which this runtime does not have.`, { cause: err });
  }
  // The body as fetch would send it, with the Content-Type it implies (text, a form, a Blob's type).
  const request = new Request(url, { method: init.method, headers, body: init.body, duplex: 'half' } as RequestInit);
  const streamed = init.body instanceof ReadableStream || (typeof init.body === 'object' && init.body !== null && Symbol.asyncIterator in init.body);
  const sent: Record<string, string> = Object.fromEntries(request.headers);
  // Node sets Host from the URL: the preview's host, which is what routes the request to the preview.
  delete sent.host;
  let body: Uint8Array | ReadableStream<Uint8Array> | null = request.body;
  if (body && !streamed) {
    // A body held already (a string, bytes, a form) goes with its length, as fetch sends it.
    body = new Uint8Array(await request.arrayBuffer());
    sent['content-length'] = String(body.byteLength);
  }
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  return new Promise<Response>((resolve, reject) => {
    const req = http.request({
      hostname: url.hostname,
      port,
      path: url.pathname + url.search,
      method: request.method,
      headers: sent,
      lookup: loopback,
      // A connection of its own: one kept alive could be closed by the preview's revocation, or
      // its idleness, just as it is reused, and fail a request that would have been answered.
      agent: false,
      signal: init.signal ?? undefined,
    });
    req.on('error', (err) => {
      reject(init.signal?.aborted ? init.signal.reason : new PaddockConnectionError(url.origin, `Could not reach ${url.origin} on loopback: ${describeCause(err)}.`, { cause: err }));
    });
    req.on('response', (res) => {
      try {
        resolve(responseOf(res));
      } catch (err) {
        res.destroy();
        reject(new PaddockConnectionError(url.origin, `${url.origin} answered what no Response can hold: ${describeCause(err)}.`, { cause: err }));
      }
    });
    void sendBody(req, body);
  });
}

/** Writes the body, a chunk at a time as the connection takes it; the request fails on its own should it break. */
async function sendBody(req: LocalClientRequest, body: Uint8Array | ReadableStream<Uint8Array> | null): Promise<void> {
  if (!(body instanceof ReadableStream)) {
    req.end(body ?? undefined);
    return;
  }
  const reader = body.getReader();
  let closed = false;
  req.once('close', () => (closed = true));
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done || closed) break;
      if (!req.write(next.value)) await drained(req);
    }
    if (!closed) req.end();
  } catch (err) {
    req.destroy(err instanceof Error ? err : new Error(String(err)));
  } finally {
    void reader.cancel().catch(() => undefined);
  }
}

function drained(req: LocalClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      req.off('drain', done);
      req.off('close', done);
      resolve();
    };
    req.once('drain', done);
    req.once('close', done);
  });
}

/** The answer as a Response whose body is read from the connection as the reader asks: at most RESPONSE_HIGH_WATER held. */
function responseOf(res: LocalIncomingMessage): Response {
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const status = res.statusCode ?? 0;
  const init = { status, statusText: res.statusMessage ?? '', headers };
  if (NULL_BODY.has(status)) {
    res.resume();
    return new Response(null, init);
  }
  let settled = false;
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        res.on('data', (chunk) => {
          if (settled) return;
          controller.enqueue(chunk);
          if ((controller.desiredSize ?? 1) <= 0) res.pause();
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          controller.close();
        });
        res.on('error', (err) => {
          if (settled) return;
          settled = true;
          controller.error(err);
        });
        res.on('close', () => {
          if (settled) return;
          settled = true;
          controller.error(new Error('The connection closed before the answer ended.'));
        });
      },
      pull() {
        res.resume();
      },
      cancel() {
        settled = true;
        res.destroy();
      },
    },
    { highWaterMark: RESPONSE_HIGH_WATER, size: (chunk) => chunk.byteLength },
  );
  return new Response(body, init);
}

function describeCause(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string }; code?: string } | undefined) ?? {};
  if (cause.code) return cause.code;
  if (cause.cause?.code) return cause.cause.code;
  if (cause.cause?.message) return cause.cause.message;
  return err instanceof Error ? err.message : String(err);
}
