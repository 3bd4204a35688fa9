import { setTimeout as sleep } from 'node:timers/promises';

/** Past this many accounts held, the ones whose budget is whole again are let go. */
const SWEEP_ABOVE = 1024;

/**
 * Each account's share of this process's work on command output: a byte budget that refills at
 * `bytesPerSecond`, up to `burstBytes`. Every byte of output costs the web a read, the masking, the
 * JSON encoding and a write, on the event loop every tenant shares; one account printing as fast
 * as its sandboxes can (floods, many answers at once) would otherwise take a whole core from its
 * neighbours (`npm run bench -- abuse`, "50 buffered execs"). An output chunk past the budget
 * waits, and its command with it (each hop passes on the wait), its bytes reserved at once: the
 * account's execs are served in the order their output came, and the wait of each is what the
 * bytes before it cost. Per process, like the event loop it protects: N web replicas give an
 * account N budgets. `bytesPerSecond` 0: no budget.
 */
export class OutputBudget {
  private readonly accounts = new Map<string, { bytes: number; at: number }>();
  private readonly bytesPerSecond: number;
  private readonly burstBytes: number;

  constructor(bytesPerSecond: number, burstBytes: number) {
    this.bytesPerSecond = bytesPerSecond;
    this.burstBytes = burstBytes;
  }

  /** Spends `bytes` of the account's budget; a promise while the account is past it, for as long as the debt takes to refill. */
  spend(accountId: string, bytes: number): void | Promise<void> {
    if (this.bytesPerSecond === 0) return;
    const now = performance.now();
    let budget = this.accounts.get(accountId);
    if (!budget) {
      if (this.accounts.size >= SWEEP_ABOVE) this.sweep(now);
      budget = { bytes: this.burstBytes, at: now };
      this.accounts.set(accountId, budget);
    }
    budget.bytes = Math.min(this.burstBytes, budget.bytes + ((now - budget.at) * this.bytesPerSecond) / 1000) - bytes;
    budget.at = now;
    if (budget.bytes >= 0) return;
    return sleep(Math.ceil((-budget.bytes * 1000) / this.bytesPerSecond));
  }

  private sweep(now: number): void {
    for (const [accountId, budget] of this.accounts) {
      if (budget.bytes + ((now - budget.at) * this.bytesPerSecond) / 1000 >= this.burstBytes) this.accounts.delete(accountId);
    }
  }
}
