import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface LingerLimits {
  /** Body bytes read and dropped after the answer, at most; a body declared larger is not waited for. */
  maxBytes: number;
  /** How long the connection may stay open after the answer for its body to end. */
  maxMs: number;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * A connection answered before its request's body was read (an early 401, 413 or 404) is closed
 * once answered (api/middleware/request-frame.ts). Closed at once, with the client's bytes still
 * arriving, the kernel answers them with a reset, which can reach the client before it has read
 * the answer: Node's fetch (undici, what the SDK uses) then failed with EPIPE instead of showing
 * the 413, while curl, which reads early, saw it. So the close lingers, as nginx's does: the
 * answer and a FIN go out, the rest of the body is read and dropped, and the socket closes when
 * the body ends, the client closes, or a bound is reached (then with a reset, as before). The
 * bounds keep a stranger from holding the connection longer than a slow request could anyway
 * (the time is below the headers timeout), and a body declared past the byte bound is not waited
 * for at all: draining part of it would only delay the same reset.
 */
export class LingeringClose {
  readonly #limits: LingerLimits;
  /** The last request each connection carried: the one whose answer closes it. */
  readonly #latest = new WeakMap<Socket, IncomingMessage>();
  readonly #lingering = new WeakSet<Socket>();

  constructor(limits: LingerLimits) {
    this.#limits = limits;
  }

  /**
   * Node closes a connection whose answer says `Connection: close` with `destroySoon`, right after
   * the answer is written: on this socket, that closing lingers when the request's body is unread.
   */
  arm(socket: Socket): void {
    const destroySoon = socket.destroySoon.bind(socket);
    socket.destroySoon = () => {
      const req = this.#latest.get(socket);
      if (this.#lingering.has(socket) || !req || !this.#waitsFor(req)) {
        destroySoon();
        return;
      }
      this.#linger(socket, req, destroySoon);
    };
  }

  /** Records each request; one pipelined behind a body this connection is dropping is not served. */
  wrap(handle: Handler): Handler {
    return (req, res) => {
      if (this.#lingering.has(req.socket)) {
        req.socket.destroy();
        return;
      }
      this.#latest.set(req.socket, req);
      handle(req, res);
    };
  }

  #waitsFor(req: IncomingMessage): boolean {
    // Read into by a reader that gave up on it (destroyed): its bytes cannot be taken any more.
    if (req.complete || req.destroyed || this.#limits.maxMs === 0) return false;
    const declared = Number(req.headers['content-length'] ?? 0);
    return !(declared > this.#limits.maxBytes);
  }

  #linger(socket: Socket, req: IncomingMessage, close: () => void): void {
    this.#lingering.add(socket);
    let dropped = 0;
    const cleanup = () => {
      clearTimeout(timer);
      socket.off('data', drop);
      req.off('end', finish);
      req.off('error', cut);
      socket.off('end', finish);
      socket.off('close', cleanup);
    };
    // The whole body is in (or the client has closed its side): nothing is left unread, and the
    // connection ends with a FIN.
    const finish = () => {
      cleanup();
      close();
    };
    const cut = () => {
      cleanup();
      socket.destroy();
    };
    const drop = (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > this.#limits.maxBytes) cut();
    };
    const timer = setTimeout(cut, this.#limits.maxMs);
    // Counted as the socket reads them: a request Node dumps (one no code read) is given none of its
    // body, only its end.
    socket.on('data', drop);
    req.once('end', finish);
    req.once('error', cut);
    socket.once('end', finish);
    socket.once('close', cleanup);
    // The answer is out: the FIN tells a client waiting for the close that there is no more.
    socket.end();
    req.resume();
  }
}
