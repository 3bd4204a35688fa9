import type { Socket } from 'node:net';

// What one client address may hold of the server without proving who it is. A connection counts
// against its address's allowance from its accept until a request on it authenticates: past the
// allowance it is not reset (a client cannot tell a reset from a lost request, and accounts behind
// one egress address would share one limit, which rate limits never do), but put on probation.
// A request on a connection on probation is served only if it authenticates, and the account's own
// limits (its buckets, its in-flight caps) then decide; anything else is answered 503
// server_busy with Retry-After, and the connection closed after the answer
// (api/middleware/probation.ts). What a stranger holds stays bounded by the headers timeout (a
// connection must send a whole request header within it), the server's connection cap and that
// one answer per connection.

/** Which allowance each connection is counted in, until it authenticates. */
const allowanceOf = new WeakMap<Socket, ConnectionAllowance>();

export class ConnectionAllowance {
  readonly #perAddress: number;
  /** Connections not yet authenticated, by client address. */
  readonly #unproven = new Map<string, number>();
  readonly #addressOf = new WeakMap<Socket, string>();
  readonly #onProbation = new WeakSet<Socket>();

  constructor(perAddress: number) {
    this.#perAddress = perAddress;
  }

  /** Counts a connection just accepted: on probation when its address has used up its allowance. */
  admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const count = (this.#unproven.get(address) ?? 0) + 1;
    this.#unproven.set(address, count);
    this.#addressOf.set(socket, address);
    allowanceOf.set(socket, this);
    if (count > this.#perAddress) this.#onProbation.add(socket);
    socket.once('close', () => this.#uncount(socket));
  }

  /** A request on the connection authenticated: it is an account's now, no longer its address's. */
  prove(socket: Socket): void {
    this.#uncount(socket);
    this.#onProbation.delete(socket);
  }

  isOnProbation(socket: Socket): boolean {
    return this.#onProbation.has(socket);
  }

  #uncount(socket: Socket): void {
    const address = this.#addressOf.get(socket);
    if (address === undefined) return;
    this.#addressOf.delete(socket);
    const left = (this.#unproven.get(address) ?? 1) - 1;
    if (left > 0) this.#unproven.set(address, left);
    else this.#unproven.delete(address);
  }
}

/** Whether the connection is past its address's allowance and has not authenticated. */
export function onProbation(socket: Socket | null | undefined): boolean {
  return socket ? (allowanceOf.get(socket)?.isOnProbation(socket) ?? false) : false;
}

/** Called once a request on the connection has authenticated. */
export function proveConnection(socket: Socket | null | undefined): void {
  if (socket) allowanceOf.get(socket)?.prove(socket);
}
