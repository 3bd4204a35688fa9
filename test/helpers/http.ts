import { request } from 'node:http';
import { randomBytes } from 'node:crypto';

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** A body of raw bytes (an archive), sent as they are with their own media type. */
export class RawBody {
  readonly bytes: Uint8Array;
  readonly contentType: string;

  constructor(bytes: Uint8Array, contentType: string) {
    this.bytes = bytes;
    this.contentType = contentType;
  }
}

/** A real HTTP request; the body is sent as JSON unless it is already a string (or a RawBody). */
export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: {
    body?: unknown;
    token?: string;
    headers?: Record<string, string>;
    /** A WebSocket route's subprotocol: the request is a real upgrade, answered 101 or refused. */
    upgrade?: string;
  } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.upgrade !== undefined) return upgrade(baseUrl, method, path, options.upgrade, headers, options.body);
  let body: string | Uint8Array | undefined;
  if (options.body instanceof RawBody) {
    body = options.body.bytes;
    headers['content-type'] ??= options.body.contentType;
  } else if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  // A hung request fails the test with its own message, well before the runner's test timeout.
  const res = await fetch(new URL(path, baseUrl), { method, headers, body, signal: AbortSignal.timeout(90_000) });
  const text = await res.text();
  let parsed: unknown = text;
  if (text && /json/.test(res.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed as T };
}

/**
 * A WebSocket handshake as a browser or client library sends it. A 101 is answered with its
 * headers and no body, and the connection is dropped at once (the server ends what it opened);
 * a refusal is read as any answer is.
 */
function upgrade(baseUrl: string, method: string, path: string, subprotocol: string, headers: Record<string, string>, body: unknown): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, baseUrl), {
      method,
      headers: {
        ...headers,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        'sec-websocket-protocol': subprotocol,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      timeout: 90_000,
    });
    const headersOf = (raw: Record<string, string | string[] | undefined>) =>
      new Headers(Object.entries(raw).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v] as [string, string]])));
    req.once('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: headersOf(res.headers), body: '' });
    });
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const parsed = text && /json/.test(String(res.headers['content-type'] ?? '')) ? JSON.parse(text) : text;
        resolve({ status: res.statusCode ?? 0, headers: headersOf(res.headers), body: parsed });
      });
    });
    req.once('timeout', () => req.destroy(new Error('the upgrade got no answer in 90 s')));
    req.once('error', reject);
    req.end(body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));
  });
}
