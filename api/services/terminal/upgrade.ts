import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { ApiError } from '../../../shared/errors.ts';
import type { AppContext } from '../../context.ts';
import { responseOnSocket } from '../../upgrade-response.ts';

// WebSocket routes go through the same Koa chain as every other route (request id, security
// headers, access log, authentication, scope, rate limit, admission, validation), so a refused
// upgrade is answered like any refused request: a problem document over HTTP, before any 101.

// Frames larger than this close the connection (1009): a keystroke frame is tiny, and a paste
// arrives in many.
export const MAX_FRAME_BYTES = 64 * 1024;

export const TERMINAL_SUBPROTOCOL = 'paddock.terminal.v1';

const wss = new WebSocketServer({
  noServer: true,
  maxPayload: MAX_FRAME_BYTES,
  perMessageDeflate: false,
  clientTracking: false,
  // checkUpgrade has refused every request that does not offer it.
  handleProtocols: (offered) => (offered.has(TERMINAL_SUBPROTOCOL) ? TERMINAL_SUBPROTOCOL : false),
});

interface UpgradeRequest extends IncomingMessage {
  paddockUpgrade?: { socket: Duplex; head: Buffer; headers?: Record<string, unknown> };
}

// The 101 carries what the chain set, as any answer does: the security headers, X-Request-Id,
// the rate limit's headers.
wss.on('headers', (lines: string[], req: UpgradeRequest) => {
  for (const [name, value] of Object.entries(req.paddockUpgrade?.headers ?? {})) {
    if (typeof value === 'string' || typeof value === 'number') lines.push(`${name}: ${value}`);
  }
});

/**
 * Which requests take the upgrade path: WebSocket handshakes only. Any other Upgrade (h2c, say)
 * stays an ordinary request, its body read by Node's parser, answered as if it asked for nothing.
 */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return req.method === 'GET' && req.headers.upgrade?.toLowerCase() === 'websocket';
}

/** The server's 'upgrade' listener: the request goes through Koa with a response bound to its socket. */
export function serveUpgrades(callback: (req: IncomingMessage, res: ServerResponse) => unknown) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    (req as UpgradeRequest).paddockUpgrade = { socket, head };
    void callback(req, responseOnSocket(req, socket));
  };
}

const KEY = /^[A-Za-z0-9+/]{22}==$/;

/** Refuses, as problems, what is not an upgrade to `subprotocol` that ws would accept. */
export function checkUpgrade(ctx: AppContext, subprotocol: string): void {
  const upgrade = (ctx.req as UpgradeRequest).paddockUpgrade;
  if (!upgrade || ctx.get('upgrade').toLowerCase() !== 'websocket') {
    throw new ApiError('upgrade_required', 'This route is a WebSocket: send a GET with "Upgrade: websocket".', {
      headers: { Upgrade: 'websocket', Connection: 'Upgrade' },
    });
  }
  if (ctx.get('sec-websocket-version') !== '13' || !KEY.test(ctx.get('sec-websocket-key'))) {
    throw new ApiError('invalid_request', 'The WebSocket handshake is malformed (Sec-WebSocket-Version 13 and a Sec-WebSocket-Key are required).');
  }
  const offered = ctx.get('sec-websocket-protocol').split(',').map((p) => p.trim());
  if (!offered.includes(subprotocol)) {
    throw new ApiError('invalid_request', `Offer the subprotocol ${subprotocol} (Sec-WebSocket-Protocol).`, { extra: { subprotocol } });
  }
}

/** Answers 101 and hands the WebSocket over; Koa writes nothing more. */
export function acceptUpgrade(ctx: AppContext, subprotocol: string, onOpen: (ws: WebSocket) => void): void {
  const upgrade = (ctx.req as UpgradeRequest).paddockUpgrade!;
  const { socket, head } = upgrade;
  upgrade.headers = { ...ctx.response.headers };
  ctx.res.detachSocket(socket as Socket);
  ctx.respond = false;
  ctx.status = 101;
  wss.handleUpgrade(ctx.req, socket, head, (ws) => {
    if (ws.protocol !== subprotocol) return ws.close(1002, 'subprotocol');
    onOpen(ws);
  });
}

