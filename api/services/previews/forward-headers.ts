import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

// What passes between a client and the program behind a preview. Paddock's own credentials stop
// here (the API's Authorization, the preview token as header or cookie); forwarding headers a
// client sent are dropped and written anew, so a program learns the true client and host; the
// rest, the program's and the client's own headers and cookies, pass unchanged.

export const TOKEN_HEADER = 'x-paddock-preview-token';
export const TOKEN_COOKIE = 'paddock_preview_token';

/** Per-connection headers (RFC 9110, 7.6.1): each hop sets its own. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);
const DROPPED = new Set(['authorization', TOKEN_HEADER, 'forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port', 'x-real-ip']);

/** The preview token a cookie header carries, if any. */
export function tokenCookie(cookie: string | undefined): string | undefined {
  if (!cookie) return undefined;
  for (const part of cookie.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === TOKEN_COOKIE) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** The cookie header without the preview token's cookie; undefined when nothing else is left. */
function otherCookies(cookie: string): string | undefined {
  const kept = cookie.split(';').filter((part) => part.split('=')[0]?.trim() !== TOKEN_COOKIE);
  const joined = kept.map((p) => p.trim()).filter(Boolean).join('; ');
  return joined || undefined;
}

/** A message's framing, which the proxy sets itself, whatever the Connection header lists. */
const FRAMING = new Set(['content-length', 'transfer-encoding']);

/** Names the Connection header lists are hop-by-hop too (never the framing: see requestHeadersForProgram). */
function listedInConnection(headers: IncomingHttpHeaders): Set<string> {
  return new Set((headers.connection ?? '').split(',').map((n) => n.trim().toLowerCase()).filter((n) => n && !FRAMING.has(n)));
}

/** The request's headers as the program gets them. `upgrade`: a WebSocket handshake, whose Upgrade and Connection pass. */
export function requestHeadersForProgram(req: { headers: IncomingHttpHeaders; socket: { remoteAddress?: string } }, proto: 'http' | 'https', upgrade: boolean): OutgoingHttpHeaders {
  const listed = listedInConnection(req.headers);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || DROPPED.has(name) || listed.has(name)) continue;
    if (name === 'cookie') {
      const cookies = otherCookies(Array.isArray(value) ? value.join('; ') : value);
      if (cookies) out.cookie = cookies;
      continue;
    }
    out[name] = value;
  }
  // The body goes on framed as it came: chunked stays chunked, whatever the method. Left to
  // node:http, a chunked GET's body would follow its headers unframed, and a program would read
  // it as a request of its own.
  if (req.headers['transfer-encoding'] !== undefined) {
    delete out['content-length'];
    out['transfer-encoding'] = 'chunked';
  }
  if (upgrade) {
    out.connection = 'Upgrade';
    out.upgrade = req.headers.upgrade;
  } else {
    out.connection = 'close';
  }
  if (req.socket.remoteAddress) out['x-forwarded-for'] = req.socket.remoteAddress;
  if (req.headers.host) out['x-forwarded-host'] = req.headers.host;
  out['x-forwarded-proto'] = proto;
  return out;
}

/**
 * The program's answer's fields ([name, value, ...], names lowercased) as the client gets them:
 * less the hop-by-hop ones and the framing, which the proxy sets for the client's own connection.
 */
export function answerFieldsForClient(fields: readonly string[]): string[] {
  const connection: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'connection') connection.push(fields[i + 1]!);
  const listed = listedInConnection({ connection: connection.join(',') });
  const out: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i]!;
    if (HOP_BY_HOP.has(name) || FRAMING.has(name) || listed.has(name)) continue;
    out.push(name, fields[i + 1]!);
  }
  return out;
}

/** A request's head as the program gets it: request line and fields, to the empty line. */
export function requestHead(method: string, path: string, headers: OutgoingHttpHeaders): string {
  let head = `${method} ${path} HTTP/1.1\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) head += `${name}: ${one}\r\n`;
  }
  return `${head}\r\n`;
}
