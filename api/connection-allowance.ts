import type { Socket } from 'node:net';

// What one client may hold of the server's connections. Until a request on it authenticates, a
// connection counts against its address's allowance; past that allowance it is not reset (a
// client cannot tell a reset from a lost request, and accounts behind one egress address would
// share one limit, which rate limits never do) but put on probation: a request on it is served
// only if it authenticates, and anything else is answered 503 server_busy with Retry-After, the
// connection closed after the answer (api/middleware/probation.ts). What a stranger holds stays
// bounded by the headers timeout (a connection must send a whole request header within it), the
// server's connection cap and that one answer per connection.
//
// Once a request on it authenticates, a connection counts against its account instead, whose own
// allowance is the same kind of number: an account's connections past it are answered 429
// too_many_in_flight (api/middleware/authenticate.ts), so that no one account holds the whole
// server, whatever addresses its clients come from, and one account never uses up another's.

/** Which allowance each connection is counted in. */
const allowanceOf = new WeakMap<Socket, ConnectionAllowance>();

/** Where a connection is counted: its address until it authenticates, then its account. */
type Holder = { address: string } | { account: string };

export class ConnectionAllowance {
  readonly #perAddress: number;
  readonly #perAccount: number;
  readonly #byAddress = new Map<string, number>();
  readonly #byAccount = new Map<string, number>();
  readonly #holderOf = new WeakMap<Socket, Holder>();
  readonly #onProbation = new WeakSet<Socket>();

  constructor(limits: { perAddress: number; perAccount: number }) {
    this.#perAddress = limits.perAddress;
    this.#perAccount = limits.perAccount;
  }

  get perAccount(): number {
    return this.#perAccount;
  }

  /** Counts a connection just accepted: on probation when its address has used up its allowance. */
  admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const count = increment(this.#byAddress, address);
    this.#holderOf.set(socket, { address });
    allowanceOf.set(socket, this);
    if (count > this.#perAddress) this.#onProbation.add(socket);
    socket.once('close', () => this.#release(socket));
  }

  /**
   * A request on the connection authenticated as `accountId`: the connection is the account's now,
   * if the account has room for it (false: it is at its allowance, and the connection stays its
   * address's). A connection already counted for an account stays with it.
   */
  prove(socket: Socket, accountId: string): boolean {
    const holder = this.#holderOf.get(socket);
    if (!holder || 'account' in holder) return true;
    if ((this.#byAccount.get(accountId) ?? 0) >= this.#perAccount) return false;
    this.#release(socket);
    increment(this.#byAccount, accountId);
    this.#holderOf.set(socket, { account: accountId });
    this.#onProbation.delete(socket);
    return true;
  }

  isOnProbation(socket: Socket): boolean {
    return this.#onProbation.has(socket);
  }

  #release(socket: Socket): void {
    const holder = this.#holderOf.get(socket);
    if (!holder) return;
    this.#holderOf.delete(socket);
    if ('address' in holder) decrement(this.#byAddress, holder.address);
    else decrement(this.#byAccount, holder.account);
  }
}

function increment(counts: Map<string, number>, key: string): number {
  const count = (counts.get(key) ?? 0) + 1;
  counts.set(key, count);
  return count;
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

/** Whether the connection is past its address's allowance and has not authenticated. */
export function onProbation(socket: Socket | null | undefined): boolean {
  return socket ? (allowanceOf.get(socket)?.isOnProbation(socket) ?? false) : false;
}

/**
 * Called once a request on the connection has authenticated: undefined when the connection is
 * the account's (or no allowance applies, behind a proxy or in the process), else the account's
 * allowance, which it is at.
 */
export function proveConnection(socket: Socket | null | undefined, accountId: string): number | undefined {
  const allowance = socket ? allowanceOf.get(socket) : undefined;
  if (!socket || !allowance || allowance.prove(socket, accountId)) return undefined;
  return allowance.perAccount;
}
