import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { Readable, duplexPair, type Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type Koa from 'koa';

// A fetch into this process's own app, for work the API does on a caller's behalf through its own
// routes (the remote MCP's tool calls): each request goes through the whole app, authentication,
// scopes, rate limits, in-flight caps and body limits included, as the same request sent from
// outside, but never through the public listener. Over loopback, those calls came back from the
// server's own address and shared one per-address connection allowance across every tenant, and
// a failure named the internal address to the caller.
//
// The request is real HTTP/1.1 over an in-memory stream pair: Node's client writes it, and an
// HTTP server of the app's that never listens parses it (both take any Duplex as a connection),
// so the app sees an ordinary request and answers it as it answers any.

/** The app's request handler behind a server that never listens, one per app. */
const servers = new WeakMap<Koa, Server>();

function serverOf(app: Koa): Server {
  let server = servers.get(app);
  if (!server) servers.set(app, (server = createServer(app.callback())));
  return server;
}

export type InProcessFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A fetch whose requests `app` answers in this process. `clientAddress` is what the app sees as
 * the requests' address (the caller's own, for its logs).
 */
export function inProcessFetch(app: Koa, clientAddress: string): InProcessFetch {
  return (input, init = {}) => send(serverOf(app), clientAddress, new URL(input), init);
}

function send(server: Server, clientAddress: string, url: URL, init: RequestInit): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<Response>((resolve, reject) => {
    const [clientEnd, serverEnd] = duplexPair();
    // One end going (the caller gave up, the app cut the connection) takes the other with it.
    clientEnd.once('close', () => serverEnd.destroy());
    serverEnd.once('close', () => clientEnd.destroy());
    server.emit('connection', asSocket(serverEnd, clientAddress));
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const req = request({
      method: init.method ?? 'GET',
      path: `${url.pathname}${url.search}`,
      host: url.hostname,
      // Only the Host header's: the connection is the stream pair.
      port: url.port || undefined,
      headers,
      createConnection: () => clientEnd as unknown as Socket,
    });
    const abort = () => req.destroy(signal?.reason as Error);
    signal?.addEventListener('abort', abort, { once: true });
    clientEnd.once('close', () => signal?.removeEventListener('abort', abort));
    req.once('response', (res) => resolve(responseOf(res, init.method)));
    // As fetch fails: a TypeError with the cause, or the signal's reason when it was aborted.
    req.once('error', (err) => reject(signal?.aborted ? (signal.reason as Error) : new TypeError('fetch failed', { cause: err })));
    writeBody(req, init.body).catch((err: unknown) => req.destroy(err as Error));
  });
}

/** What the app reads of the connection's socket, besides the stream itself. */
function asSocket(end: Duplex, remoteAddress: string): Socket {
  return Object.assign(end, {
    remoteAddress,
    remotePort: 0,
    bytesRead: 0,
    // Socket timers guard the network's slow readers and writers; both ends here are this
    // process's, and the caller's own request bounds the call.
    setTimeout: () => end,
    setNoDelay: () => end,
    setKeepAlive: () => end,
  }) as unknown as Socket;
}

async function writeBody(req: ReturnType<typeof request>, body: RequestInit['body']): Promise<void> {
  if (body === undefined || body === null) {
    req.end();
  } else if (typeof body === 'string' || body instanceof Uint8Array) {
    req.setHeader('content-length', Buffer.byteLength(body));
    req.end(body);
  } else if (body instanceof ReadableStream) {
    // Sent as it is read (chunked), as fetch sends a stream.
    await pipeline(Readable.fromWeb(body as NodeReadableStream), req);
  } else {
    throw new TypeError('in-process fetch sends a string, bytes or a stream');
  }
}

const NO_CONTENT = new Set([204, 205, 304]);

function responseOf(res: IncomingMessage, method = 'GET'): Response {
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const status = res.statusCode ?? 500;
  const empty = NO_CONTENT.has(status) || method.toUpperCase() === 'HEAD';
  if (empty) res.resume();
  const body = empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
  return new Response(body, { status, statusText: res.statusMessage, headers });
}
