import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * A response written on an upgrade request's socket, for answering it over HTTP (a refusal, a
 * redirect) before any 101. Node parses nothing more on that socket: whatever the answer, it is
 * the last, and the socket ends with it.
 */
export function responseOnSocket(req: IncomingMessage, socket: Duplex): ServerResponse {
  socket.on('error', () => socket.destroy());
  const res = new ServerResponse(req);
  res.assignSocket(socket as Socket);
  res.shouldKeepAlive = false;
  res.once('finish', () => socket.end());
  return res;
}
