import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

// Errors leave the stand-in as the API server's own `Status` objects, so the client library
// parses them exactly as it would a real cluster's.

export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'UnsupportedMediaType'
  | 'Invalid'
  | 'Unauthorized'
  | 'BadRequest'
  | 'MethodNotAllowed'
  | 'Expired'
  | 'InternalError'
  | 'RequestEntityTooLarge';

export interface StatusJson {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: StatusReason;
  details?: { name?: string; kind?: string; causes?: { reason: string; message: string; field?: string }[] };
  code: number;
}

export class StatusError extends Error {
  readonly status: StatusJson;
  constructor(code: number, reason: StatusReason, message: string, details?: StatusJson['details']) {
    super(message);
    this.status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      ...(details ? { details } : {}),
      code,
    };
  }
}

export const notFound = (name: string) =>
  new StatusError(404, 'NotFound', `pods "${name}" not found`, { name, kind: 'pods' });
export const alreadyExists = (name: string) =>
  new StatusError(409, 'AlreadyExists', `pods "${name}" already exists`, { name, kind: 'pods' });
export const badRequest = (message: string) => new StatusError(400, 'BadRequest', message);
export const unauthorized = () => new StatusError(401, 'Unauthorized', 'Unauthorized');

export function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendStatus(res: ServerResponse, err: StatusError): void {
  sendJson(res, err.status.code, err.status);
}

/** A refusal written straight onto a socket that asked for a WebSocket upgrade. */
export function refuseUpgrade(socket: Duplex, err: StatusError): void {
  const text = JSON.stringify(err.status);
  const code = err.status.code;
  socket.end(
    `HTTP/1.1 ${code} ${STATUS_CODES[code] ?? 'Error'}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(text)}\r\n` +
      'Connection: close\r\n\r\n' +
      text,
  );
}
