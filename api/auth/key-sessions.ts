import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/logger.ts';
import type { ApiKeyStore, KeyCheck, KeyHolder } from './api-key-store.ts';

// A revoked key ends every request it has open, on every replica, before its DELETE answers:
// terminals, event streams, followed output, streamed and buffered exec, archives, remote MCP.
//
// Each API process keeps its own requests by key (in memory: only it holds their sockets) and
// confirms their keys in Redis every CHECK_MS, one round trip for all of them. A request sends
// nothing (no frame, event, line or chunk) and its terminal takes no keystroke unless its key was
// confirmed within LEASE_MS, by a check *sent* within it: a process that cannot reach Redis holds
// its streams until it can again. Every lookup and check that finds the key valid also marks the
// process, by Redis's clock, a holder of that key for MARK_MS, in the same script. (A lookup
// leaves the marking out while the process's last mark on the key is younger than MARK_MS -
// LEASE_MS, which still covers the lease its confirmation gives: a key in steady use is marked by
// the checks alone, and its lookups cost Redis nothing more.)
//
// A revocation writes the key's tombstone, then waits while some holder's mark lasts, at most
// LEASE_MS (plus slack): a check that runs after the tombstone finds it, ends the key's requests
// in that process and takes its mark off; one that ran before it was sent before it, so LEASE_MS
// later its confirmation has lapsed wherever it is. Either way nothing more goes out for the key
// once the DELETE answers, without any replica having to be reachable. MARK_MS >= LEASE_MS: a
// revocation that finds no mark knows no request of the key is confirmed anywhere. The common
// case answers as soon as the holders have taken their marks off, within about CHECK_MS.
//
// The one exception: an answer in one piece waits for a check that is due, but not for Redis to
// come back. A process whose checks fail answers the requests it had in hand (a create that was
// waiting for its sandbox, say), as it would have a moment earlier, rather than hold every one of
// them for the length of an outage. During an outage no revocation can answer (its tombstone
// needs Redis); a replica cut off from a Redis the others still reach is the one case where such
// an answer can follow a revocation made elsewhere.
//
// A request is registered before its key's lookup is sent, so a check's verdict, whenever it is
// handled, cannot miss a request whose lookup raced the revocation: the check was sent after the
// registration and finds it, or the lookup was sent after the check and meets the tombstone.

/** How often a process confirms the keys of its open requests. */
const CHECK_MS = 250;
/** How long a confirmation lasts: past it, a request waits for the next one before sending anything. */
export const LEASE_MS = 1000;
/** How long a holder's mark lasts in Redis unless renewed: at least a lease. */
const MARK_MS = 2 * LEASE_MS;
/** A lookup marks the process again once its last mark is this old: MARK_MS - LEASE_MS, halved for margin. */
const REMARK_MS = (MARK_MS - LEASE_MS) / 2;
/** Timers and clocks of two processes drift: a revocation waits this much past a lease. */
const SLACK_MS = 100;
/** How often a revocation looks whether the holders' marks are gone. */
const WAIT_STEP_MS = 25;

export const REVOKED_DETAIL = 'The API key was revoked.';

/** A request registered, before its key's lookup is sent (KeySessions.open). */
export type OpenedSession = KeySession & {
  holder(holder: KeyHolder): KeyHolder | undefined;
  confirmed(sentAt: number, marked: boolean): void;
  release(): void;
};

/** A request made with an API key, for as long as it is open. */
export interface KeySession {
  /** Aborted once the key is found revoked: the request's work stops. */
  readonly signal: AbortSignal;
  readonly revoked: boolean;
  /**
   * Whether the request may send something now: true (its key was confirmed lately), false (the
   * key is revoked), or a promise of one of those once the next check has answered.
   */
  ready(): boolean | Promise<boolean>;
  /**
   * As ready(), for an answer in one piece: also true while this process cannot reach Redis (it
   * answers the requests it had in hand, as it would have a moment earlier), but a check that is
   * merely due is waited for.
   */
  answerable(): boolean | Promise<boolean>;
  /**
   * How the request ends when its key is revoked (a WebSocket's close, a stream's last line);
   * replaces the previous. Run at once when the key is revoked already.
   */
  onRevoked(end: () => void): void;
}

interface Entry {
  keyHash: string;
  sessions: Set<Session>;
  /** performance.now() when the last check that found the key valid was sent. */
  confirmedAt: number;
  /** performance.now() when the last check or lookup that marked this process the key's holder was sent; -Infinity: no mark. */
  markedAt: number;
  revoked: boolean;
  /** A check in the database (the cache had no entry) is under way. */
  lookingUp: boolean;
  waiting: Waiter[];
}

/** A send waiting for the key's next check; a lenient one goes on when the check cannot be made. */
interface Waiter {
  wake(ok: boolean): void;
  lenient: boolean;
}

/** What every request of the process shares: whether its checks are failing (Redis out of reach). */
interface Checks {
  failing: boolean;
}

class Session implements KeySession {
  // Made when first asked for: most requests never are, and an AbortController is not free.
  #abort: AbortController | undefined;
  readonly #entry: Entry;
  readonly #checks: Checks;
  #end: (() => void) | undefined;

  constructor(entry: Entry, checks: Checks) {
    this.#entry = entry;
    this.#checks = checks;
  }

  get signal(): AbortSignal {
    if (!this.#abort) {
      this.#abort = new AbortController();
      if (this.#entry.revoked) this.#abort.abort();
    }
    return this.#abort.signal;
  }

  get revoked(): boolean {
    return this.#entry.revoked;
  }

  ready(): boolean | Promise<boolean> {
    return this.#wait(false);
  }

  answerable(): boolean | Promise<boolean> {
    return this.#wait(true);
  }

  #wait(lenient: boolean): boolean | Promise<boolean> {
    const entry = this.#entry;
    if (entry.revoked) return false;
    if (performance.now() - entry.confirmedAt < LEASE_MS || (lenient && this.#checks.failing)) return true;
    return new Promise<boolean>((wake) => entry.waiting.push({ wake, lenient }));
  }

  onRevoked(end: () => void): void {
    this.#end = end;
    if (this.#entry.revoked) end();
  }

  /** Who the lookup about to be sent marks the key's holder: none while the last mark covers what it confirms. */
  holder(holder: KeyHolder): KeyHolder | undefined {
    return performance.now() - this.#entry.markedAt < REMARK_MS ? undefined : holder;
  }

  /** The lookup sent at `sentAt` found the key valid (and marked this process, when `marked`). */
  confirmed(sentAt: number, marked: boolean): void {
    const entry = this.#entry;
    if (marked) entry.markedAt = Math.max(entry.markedAt, sentAt);
    // Without a mark of its own, the lookup confirms only what the last mark covers.
    else if (!(sentAt - entry.markedAt < MARK_MS - LEASE_MS)) return;
    entry.confirmedAt = Math.max(entry.confirmedAt, sentAt);
  }

  release(): void {
    this.#entry.sessions.delete(this);
  }

  end(log: Logger): void {
    this.#abort?.abort();
    try {
      this.#end?.();
    } catch (err) {
      log.warn({ err }, 'ending a request of a revoked key failed');
    }
  }
}

/** This process's open requests by key, kept confirmed (see above). */
export class KeySessions {
  readonly holder: KeyHolder = { id: randomBytes(9).toString('base64url'), ttlMs: MARK_MS };
  private readonly entries = new Map<string, Entry>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private readonly checks: Checks = { failing: false };
  private closed = false;
  private readonly apiKeys: ApiKeyStore;
  private readonly unitOfWork: () => EntityManager;
  private readonly log: Logger;

  /** `unitOfWork` forks one for a check that reaches the database. */
  constructor(apiKeys: ApiKeyStore, unitOfWork: () => EntityManager, log: Logger) {
    this.apiKeys = apiKeys;
    this.unitOfWork = unitOfWork;
    this.log = log;
  }

  /**
   * Registers a request of the key, before its lookup is sent. `release` once its answer is over
   * (or it was refused); `confirmed(sentAt)` once the lookup sent at `sentAt` marked this process.
   */
  open(keyHash: string): OpenedSession {
    let entry = this.entries.get(keyHash);
    if (!entry) {
      entry = { keyHash, sessions: new Set(), confirmedAt: -Infinity, markedAt: -Infinity, revoked: false, lookingUp: false, waiting: [] };
      this.entries.set(keyHash, entry);
    }
    const session = new Session(entry, this.checks);
    entry.sessions.add(session);
    this.schedule();
    return session;
  }

  /**
   * After the key's tombstone is written: ends this process's requests of it at once, then waits
   * until no other holder's mark lasts, or until any confirmation sent before the tombstone has
   * lapsed.
   */
  async revoked(keyHash: string): Promise<void> {
    const deadline = performance.now() + LEASE_MS + SLACK_MS;
    const entry = this.entries.get(keyHash);
    if (entry && !entry.revoked) this.revoke(entry);
    else void this.apiKeys.unhold(keyHash, this.holder).catch(() => undefined);
    while (performance.now() < deadline) {
      const left = await this.apiKeys.holders(keyHash).catch(() => 1);
      if (left === 0) return;
      await sleep(Math.min(WAIT_STEP_MS, Math.max(0, deadline - performance.now())));
    }
  }

  /** Stops the checks (the server has drained). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer || this.checking || this.closed || this.entries.size === 0) return;
    this.timer = setTimeout(() => this.check(), CHECK_MS);
    this.timer.unref();
  }

  /**
   * One round trip: the keys with open requests checked (and this process marked again), the
   * marks of keys whose requests are all over taken off. The list is made and sent in one turn, so
   * a request registered after it sends its lookup, and its mark, after this.
   */
  private check(): void {
    this.timer = undefined;
    const held: Entry[] = [];
    const dropped: string[] = [];
    for (const entry of this.entries.values()) {
      if (entry.sessions.size > 0) {
        if (entry.markedAt !== -Infinity && !entry.revoked) held.push(entry);
        continue;
      }
      this.entries.delete(entry.keyHash);
      wakeAll(entry, false);
      if (entry.markedAt !== -Infinity && !entry.revoked) dropped.push(entry.keyHash);
    }
    if (held.length === 0 && dropped.length === 0) return this.schedule();
    this.checking = true;
    const sentAt = performance.now();
    this.apiKeys
      .check(
        held.map((e) => e.keyHash),
        dropped,
        this.holder,
      )
      .then(
        (verdicts) => {
          if (this.checks.failing) this.log.info('the keys of open requests are confirmed again');
          this.checks.failing = false;
          verdicts.forEach((verdict, i) => this.settle(held[i]!, verdict, sentAt));
        },
        (err: unknown) => {
          if (!this.checks.failing) this.log.warn({ err: (err as Error).message }, 'could not confirm the keys of open requests: their streams wait');
          this.checks.failing = true;
          for (const entry of this.entries.values()) wakeAll(entry, true, (w) => w.lenient);
        },
      )
      .finally(() => {
        this.checking = false;
        this.schedule();
      });
  }

  private settle(entry: Entry, verdict: KeyCheck, sentAt: number): void {
    if (entry.revoked) return;
    if (verdict === 'valid') return this.confirm(entry, sentAt);
    if (verdict === 'revoked') return this.revoke(entry, false);
    // No cache entry (it expired, or the cache is off): the database decides, as for a lookup.
    if (entry.lookingUp) return;
    entry.lookingUp = true;
    const askedAt = performance.now();
    this.apiKeys
      .authenticate(this.unitOfWork, entry.keyHash, undefined, this.holder)
      .then(
        (identity) => {
          if (!identity) this.revoke(entry);
          else if (identity.checked) this.confirm(entry, askedAt);
        },
        (err: unknown) => this.log.warn({ err: (err as Error).message }, 'could not confirm an API key of open requests'),
      )
      .finally(() => (entry.lookingUp = false));
  }

  /** A check sent at `sentAt` found the key valid and marked this process. */
  private confirm(entry: Entry, sentAt: number): void {
    entry.markedAt = Math.max(entry.markedAt, sentAt);
    entry.confirmedAt = Math.max(entry.confirmedAt, sentAt);
    wakeAll(entry, true);
  }

  /** Ends every request of the key here; its mark goes (with `unhold`, unless the check took it off). */
  private revoke(entry: Entry, unhold = true): void {
    entry.revoked = true;
    wakeAll(entry, false);
    for (const session of entry.sessions) session.end(this.log);
    if (unhold && entry.markedAt !== -Infinity) void this.apiKeys.unhold(entry.keyHash, this.holder).catch(() => undefined);
  }
}

/** Wakes the entry's waiting sends (those `which` picks) with `ok`. */
function wakeAll(entry: Entry, ok: boolean, which: (w: Waiter) => boolean = () => true): void {
  const woken = entry.waiting.filter(which);
  entry.waiting = entry.waiting.filter((w) => !which(w));
  for (const w of woken) w.wake(ok);
}
