import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import type { JsonResponse } from './http.ts';

// What fetch cannot send: a body on GET or DELETE, a chunked body, a body without a
// Content-Type, header bytes outside Latin-1, several requests down one connection.

function parseBody(text: string, contentType: string | null): unknown {
  if (text && /json/.test(contentType ?? '')) return JSON.parse(text);
  return text;
}

function toHeaders(raw: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

/**
 * One request through node:http. `chunked` sends the body with Transfer-Encoding: chunked (no
 * Content-Length). Resolves with the response even when the server stops reading the body early.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; chunked?: boolean } = {},
): Promise<JsonResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    let answered = false;
    const headers: Record<string, string> = { ...options.headers };
    if (options.chunked) headers['transfer-encoding'] = 'chunked';
    else if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    const req = httpRequest(
      // The path goes out exactly as given: no normalisation of dots, slashes or escapes.
      { host: url.hostname, port: url.port, method, path, headers, agent: false },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const h = toHeaders(res.headers);
          try {
            resolve({ status: res.statusCode ?? 0, headers: h, body: parseBody(text, h.get('content-type')) });
          } catch (err) {
            reject(err as Error);
          }
        });
      },
    );
    req.on('error', (err) => {
      // A server that answers before reading the whole body may reset the connection afterwards.
      if (!answered) reject(err);
    });
    if (options.body !== undefined) req.end(options.body);
    else req.end();
  });
}

export interface RawExchangeResponse extends JsonResponse {
  /** The status line and header block as received. */
  head: string;
}

/**
 * Writes `bytes` as they are down one fresh TCP connection and parses up to `count` HTTP/1.1
 * responses (Content-Length framed, or read to the close of the connection).
 */
export function rawExchange(baseUrl: string, bytes: string | Buffer, count = 1): Promise<RawExchangeResponse[]> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let buffer = Buffer.alloc(0);
    const responses: RawExchangeResponse[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(responses);
    };
    const parse = (ended: boolean) => {
      while (responses.length < count) {
        const headEnd = buffer.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const head = buffer.subarray(0, headEnd).toString('latin1');
        const [statusLine, ...lines] = head.split('\r\n');
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0);
        const headers = new Headers();
        for (const line of lines) {
          const colon = line.indexOf(':');
          if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
        }
        const length = headers.get('content-length');
        let bodyEnd: number;
        if (length !== null) bodyEnd = headEnd + 4 + Number(length);
        else if (status === 204 || status === 304 || (status >= 100 && status < 200)) bodyEnd = headEnd + 4;
        else if (ended) bodyEnd = buffer.length;
        else return;
        if (buffer.length < bodyEnd) return;
        const text = buffer.subarray(headEnd + 4, bodyEnd).toString('utf8');
        buffer = buffer.subarray(bodyEnd);
        responses.push({ status, headers, head, body: parseBody(text, headers.get('content-type')) });
      }
      finish();
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      parse(false);
    });
    socket.on('end', () => {
      parse(true);
      finish();
    });
    socket.on('error', (err) => {
      if (responses.length > 0) finish();
      else reject(err);
    });
    socket.write(bytes);
  });
}
