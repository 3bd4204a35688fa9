/**
 * Each account's fair share of this process's bulk transfers (archive downloads and uploads; any
 * stream of bytes between a client and a sandbox can take part). Every transfer flows through
 * the same hops (this event loop, the runtime's channel to the sandbox, the host's CPU), which
 * serve whatever is ready, stream by stream: an account with four transfers would take four
 * shares to a neighbour's one. So, while more than one account has transfers open here, each
 * account has the same number of them flowing at once, as many as the account with the fewest
 * has open (at least one); the others wait their turn, and an account's flowing ones give way to
 * its waiting ones every `turnMs`. A transfer that waits is paused at its chunk: the runtime stops
 * reading the command's output (or the client's body), so nothing accumulates meanwhile.
 *
 * A lone account's transfers all flow, at whatever speed the hops give them: no rate is fixed.
 * Nor does a neighbour's slow transfer slow anyone else's: it counts as one flowing transfer of
 * its own account, whatever its pace. Per process, like the event loop it shares: each web replica
 * shares its own transfers; across replicas, PADDOCK_INFLIGHT_FILES_PER_ACCOUNT bounds how many
 * an account has open at all. `turnMs` 0: no fair share (every transfer flows).
 */
export class BulkTransfers {
  private readonly accounts = new Map<string, AccountTransfers>();
  private readonly turnMs: number;
  private readonly onWait: () => void;
  /** How many transfers each account may have flowing now; Infinity for a lone account. */
  private allowance = Infinity;

  constructor(turnMs: number, onWait: () => void = () => undefined) {
    this.turnMs = turnMs;
    this.onWait = onWait;
  }

  /** A transfer of the account, until closed: each chunk goes through its `pass` first. */
  open(accountId: string): BulkTransfer {
    if (this.turnMs === 0) return FREE;
    let account = this.accounts.get(accountId);
    if (!account) this.accounts.set(accountId, (account = new AccountTransfers(accountId)));
    const transfer = new Transfer(this, account);
    account.open.add(transfer);
    this.rebalance();
    return transfer;
  }

  /** @internal Called by Transfer before each chunk. */
  pass(t: Transfer, bytes: number): void | Promise<void> {
    const account = t.account;
    if (t.closed || bytes === 0) return;
    if (account.flowing.has(t)) {
      const over = account.flowing.size > this.allowance;
      const turnOver = account.waiting.length > 0 && performance.now() - t.flowingSince >= this.turnMs;
      if (!over && !turnOver) return;
      this.stop(t);
      this.grant(account);
    } else if (account.flowing.size < this.allowance && account.waiting.length === 0) {
      this.flow(t);
      return;
    }
    this.onWait();
    return new Promise<void>((resolve) => {
      t.resume = resolve;
      account.waiting.push(t);
      this.grant(account);
      this.armTurn(account);
    });
  }

  /** @internal */
  close(t: Transfer): void {
    if (t.closed) return;
    t.closed = true;
    const account = t.account;
    this.stop(t);
    const at = account.waiting.indexOf(t);
    if (at !== -1) account.waiting.splice(at, 1);
    t.resume?.();
    t.resume = undefined;
    account.open.delete(t);
    if (account.open.size === 0) {
      clearTimeout(account.timer);
      this.accounts.delete(account.id);
    }
    this.rebalance();
  }

  private rebalance(): void {
    let fewest = Infinity;
    for (const account of this.accounts.values()) fewest = Math.min(fewest, account.open.size);
    this.allowance = this.accounts.size <= 1 ? Infinity : Math.max(1, fewest);
    // A larger allowance lets waiting transfers flow now; a smaller one is met as the flowing ones
    // pass their next chunk (or their turn ends).
    for (const account of this.accounts.values()) {
      this.grant(account);
      this.armTurn(account);
    }
  }

  private flow(t: Transfer): void {
    t.account.flowing.add(t);
    t.flowingSince = performance.now();
  }

  private stop(t: Transfer): void {
    t.account.flowing.delete(t);
  }

  /** Lets the account's oldest waiting transfers flow, as many as its allowance has room for. */
  private grant(account: AccountTransfers): void {
    while (account.flowing.size < this.allowance && account.waiting.length > 0) {
      const next = account.waiting.shift()!;
      this.flow(next);
      const resume = next.resume;
      next.resume = undefined;
      resume?.();
    }
  }

  /**
   * Ends the turns that ran out while transfers of the account wait: a flowing transfer that
   * passes no chunk (its client reads slowly, its command is quiet) gives way all the same.
   */
  private armTurn(account: AccountTransfers): void {
    clearTimeout(account.timer);
    account.timer = undefined;
    if (account.waiting.length === 0 || account.flowing.size === 0) return;
    const now = performance.now();
    let due = Infinity;
    for (const t of account.flowing) due = Math.min(due, t.flowingSince + this.turnMs);
    account.timer = setTimeout(() => {
      account.timer = undefined;
      const at = performance.now();
      for (const t of [...account.flowing]) {
        if (account.waiting.length === 0) break;
        if (at - t.flowingSince >= this.turnMs || account.flowing.size > this.allowance) {
          // Its next chunk waits for a turn of its own.
          this.stop(t);
          this.grant(account);
        }
      }
      this.armTurn(account);
    }, Math.max(0, due - now));
    account.timer.unref();
  }
}

export interface BulkTransfer {
  /** Before a chunk of `bytes` goes on: a promise while the transfer waits its account's turn. */
  pass(bytes: number): void | Promise<void>;
  /** The transfer ended (whole, failed or abandoned); calling it again does nothing. */
  close(): void;
}

class AccountTransfers {
  readonly id: string;
  readonly open = new Set<Transfer>();
  readonly flowing = new Set<Transfer>();
  readonly waiting: Transfer[] = [];
  timer: NodeJS.Timeout | undefined;

  constructor(id: string) {
    this.id = id;
  }
}

class Transfer implements BulkTransfer {
  readonly account: AccountTransfers;
  private readonly owner: BulkTransfers;
  flowingSince = 0;
  closed = false;
  resume: (() => void) | undefined;

  constructor(owner: BulkTransfers, account: AccountTransfers) {
    this.owner = owner;
    this.account = account;
  }

  pass(bytes: number): void | Promise<void> {
    return this.owner.pass(this, bytes);
  }

  close(): void {
    this.owner.close(this);
  }
}

const FREE: BulkTransfer = { pass: () => undefined, close: () => undefined };

/** The chunks of a streamed body (an upload), each let through once its transfer's turn allows. */
export async function* pacedChunks(chunks: AsyncIterable<Uint8Array>, transfer: BulkTransfer): AsyncGenerator<Uint8Array> {
  for await (const chunk of chunks) {
    await transfer.pass(chunk.byteLength);
    yield chunk;
  }
}
